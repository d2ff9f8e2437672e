// Package registry makes running voltro instances discoverable. Instances on
// a shared SQL store are found through the runners table (each row carries
// its inspect address). Instances on single-process stores (SQLite, memory)
// cannot be seen there by another process, so each engine also writes a
// small JSON entry, <replica>-<pid>.json, into a local registry directory
// at Start and removes it at Close. An entry whose process is gone is stale.
package registry
