package local

import (
	"os/exec"
	"testing"
)

// TestShellQuoteExpandsNothing: whatever a value holds, the shell reads it back as
// it was, running and expanding nothing.
func TestShellQuoteExpandsNothing(t *testing.T) {
	for _, v := range []string{"bikerental-events", "http://127.0.0.1:4566/", "$HOME", "it's $(echo no) `echo no` \\n", "a b\tc"} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(v)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != v {
			t.Errorf("%q quoted as %s reads back as %q", v, shellQuote(v), out)
		}
	}
}
