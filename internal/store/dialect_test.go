package store

import "testing"

func TestDialectShared(t *testing.T) {
	for d, want := range map[Dialect]bool{Postgres: true, MariaDB: true, MySQL: true, SQLite: false, Memory: false} {
		if got := d.Shared(); got != want {
			t.Errorf("%s.Shared() = %v, want %v", d, got, want)
		}
	}
}
