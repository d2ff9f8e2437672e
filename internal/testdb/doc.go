// Package testdb gives tests real, empty databases: one PostgreSQL or MariaDB
// database per test package (named by the caller), created afresh. Tests fail
// (they never skip) when a server does not answer: run scripts/test, which
// starts what is missing.
package testdb
