package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/voltro/voltro/internal/testdb"
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if len(os.Args) < 2 {
		usage()
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	envFile := fs.String("env", "", "file to write (up) or read (down) the cluster's variables")
	base := fs.Int("base", 0, "first SQL port to try (default 3311)")
	owner := fs.Int("owner", 0, "pid of the process the cluster serves; a later up stops the cluster once it is gone")
	_ = fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "up":
		err = up(log, *envFile, *base, *owner)
	case "down":
		err = down(*envFile)
	default:
		usage()
	}
	if err != nil {
		log.Error("galera "+os.Args[1]+" failed", "err", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: galera up [-env FILE] [-base PORT] | galera down -env FILE")
	os.Exit(2)
}

func up(log *slog.Logger, envFile string, base, owner int) error {
	// On SIGINT/SIGTERM the start is abandoned and the nodes started so far
	// are stopped: detached nodes would otherwise outlive us unrecorded.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c, err := testdb.StartGalera(ctx, testdb.GaleraOptions{BasePort: base, Detach: true, OwnerPID: owner, Logger: log})
	if err != nil {
		return err
	}
	var pids []string
	for i := range 3 {
		pids = append(pids, strconv.Itoa(c.PID(i)))
	}
	urls := strings.Join(c.URLs(), ",")
	if envFile != "" {
		body := fmt.Sprintf("%s=%s\nVOLTRO_TEST_GALERA_DIR=%s\nVOLTRO_TEST_GALERA_PIDS=%q\n",
			testdb.GaleraURLsEnv, urls, c.Dir(), strings.Join(pids, " "))
		if err := os.WriteFile(envFile, []byte(body), 0o644); err != nil {
			c.Stop()
			return fmt.Errorf("write %s: %w", envFile, err)
		}
	}
	fmt.Println(urls)
	return nil
}

func down(envFile string) error {
	if envFile == "" {
		return fmt.Errorf("down needs -env FILE (written by up)")
	}
	f, err := os.Open(envFile)
	if err != nil {
		return fmt.Errorf("read env file: %w", err)
	}
	defer f.Close()
	var dir string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VOLTRO_TEST_GALERA_DIR="); ok {
			dir = v
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read env file: %w", err)
	}
	if dir == "" {
		return fmt.Errorf("%s names no VOLTRO_TEST_GALERA_DIR", envFile)
	}
	return testdb.StopGaleraDir(dir)
}
