package voltro_test

// The README's "Use it in your app" walks a newcomer through every part
// an app uses, tests included: voltrotest on the memory store, NewSQLite
// for code that starts runs in its own transactions, and where to read on.

import (
	"os"
	"strings"
	"testing"
)

func TestReadmeUseItInYourAppShowsTesting(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Use it in your app\n")
	if !ok {
		t.Fatal(`README.md has no "## Use it in your app" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, want := range []string{"voltrotest.New(t, ", "voltrotest.NewSQLite(", "env.WaitFor(", "StartTx", "docs/testing.md"} {
		if !strings.Contains(section, want) {
			t.Errorf("README's Use it in your app does not mention %q", want)
		}
	}
}
