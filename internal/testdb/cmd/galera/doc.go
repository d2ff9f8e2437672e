// Command galera starts and stops the throwaway 3-node Galera cluster that
// scripts/test shares among all test packages, using the same code as
// testdb.Galera.
//
//	galera up [-env FILE] [-base PORT] [-owner PID]
//	                                     start; print the URLs; write FILE
//	galera down -env FILE                kill the recorded PIDs; remove the dir
//
// FILE holds shell assignments: VOLTRO_TEST_GALERA_URLS (comma-separated
// mariadb:// URLs, one per node), VOLTRO_TEST_GALERA_DIR and
// VOLTRO_TEST_GALERA_PIDS.
package main
