package dashboard_test

// The screenshots reach CI: scripts/test (which .ci/run runs) sets
// VOLTRO_TEST_ARTIFACTS to a directory at the repo root that outlives the
// run and that git ignores, so the PNGs are kept and never committed.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

func TestArtifactsDirectory(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^export VOLTRO_TEST_ARTIFACTS=\$\{VOLTRO_TEST_ARTIFACTS:-\$PWD/([a-z]+)\}$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/test does not export VOLTRO_TEST_ARTIFACTS (default $PWD/<dir> at the repo root): CI would keep no screenshot")
	}
	shot := filepath.Join(string(m[1]), "voltro-dashboard-screenshots", "cluster.png")
	cmd := exec.Command("git", "check-ignore", "-q", "--no-index", shot)
	cmd.Dir = root
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s is not git-ignored (%v): a run's screenshots would show up as changes", shot, err)
	}
}
