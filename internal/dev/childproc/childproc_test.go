package childproc_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/dev/childproc"
)

// TestAnExitIsExplainedFromTheLog: a child that writes and fails is reported with
// its exit status and the end of its log.
func TestAnExitIsExplainedFromTheLog(t *testing.T) {
	p, err := childproc.Start("failing", exec.Command("sh", "-c", "echo first; echo last words >&2; exit 3"), filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not exit")
	}
	got := p.ExitReason()
	if !strings.HasPrefix(got, "failing exit status 3") || !strings.Contains(got, "first\nlast words") {
		t.Errorf("ExitReason = %q", got)
	}
}

// TestStopEndsARunningChild, and a second Stop is harmless.
func TestStopEndsARunningChild(t *testing.T) {
	p, err := childproc.Start("sleep", exec.Command("sleep", "60"), filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned with the child running")
	}
	p.Stop()
}

func TestAMissingExecutableIsAnError(t *testing.T) {
	if _, err := childproc.Start("nothing", exec.Command(filepath.Join(t.TempDir(), "no-such-program")), filepath.Join(t.TempDir(), "log")); err == nil {
		t.Fatal("Start of a missing executable succeeded")
	}
}
