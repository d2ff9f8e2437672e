package voltro_test

// The boot line says each thing once: on the app's own handler (the stderr
// of an app or the demo) every key appears a single time.
// go test . -run BootLine -update rewrites the golden file.

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/voltro/voltro"
	"github.com/voltro/voltro/internal/golden"
)

func TestBootLineSaysEachThingOnce(t *testing.T) {
	t.Setenv("VOLTRO_REGISTRY_DIR", t.TempDir())
	ctx := context.Background()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	env := map[string]string{"POD_NAME": "boot-1", "VOLTRO_INSPECT_ADDR": "127.0.0.1:0"}
	app, err := voltro.New(ctx, voltro.WithDB("memory:"), voltro.WithLogger(log), voltro.WithEnv(func(k string) string { return env[k] }))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	var line string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "voltro started") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no boot line in:\n%s", buf.String())
	}
	line = regexp.MustCompile(`:\d+\b`).ReplaceAllString(line, ":PORT") + "\n"
	golden.Check(t, "bootline.golden", []byte(line))
	for _, k := range []string{"replica", "runner", "dialect", "cdc", "coordination", "inspect", "version"} {
		if n := len(regexp.MustCompile(`\b`+k+`(Id)?=`).FindAllString(line, -1)); n != 1 {
			t.Errorf("%s appears %d times in the boot line: %s", k, n, line)
		}
	}
}
