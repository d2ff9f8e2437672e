// Package cdcpub links the internal change feed to its public wrapper: the
// root package holds a *cdc.Feed and hands users a *changes.Feed, without
// package changes exporting a constructor that names an internal type.
package cdcpub
