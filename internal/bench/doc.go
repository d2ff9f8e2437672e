// Package bench measures voltro against the database it runs on: every
// figure is printed beside the database's own single-row commit rate from
// the same run, so results compare across machines as ratios.
package bench
