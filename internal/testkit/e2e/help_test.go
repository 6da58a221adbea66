package e2e_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEveryProgramAnswersHelp builds every program under cmd/ and tools/cmd/ and runs it with -h
// and --help: each prints its usage and exits 0 at once, starting nothing (a
// program that started its stack would still be running when the deadline ends it).
func TestEveryProgramAnswersHelp(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	var entries []os.DirEntry
	for _, dir := range []string{"cmd", filepath.Join("tools", "cmd")} {
		more, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, more...)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/...", "./tools/cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/... ./tools/cmd/...: %v\n%s", err, out)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, flag := range []string{"-h", "--help"} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			cmd := exec.CommandContext(ctx, filepath.Join(bin, e.Name()), flag)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			timedOut := ctx.Err() != nil
			cancel()
			if timedOut {
				t.Errorf("%s %s was still running after 10s: it started something", e.Name(), flag)
			} else if err != nil {
				t.Errorf("%s %s: %v\n%s", e.Name(), flag, err, out.String())
			}
			if !strings.Contains(strings.ToLower(out.String()), "usage") {
				t.Errorf("%s %s printed no usage:\n%s", e.Name(), flag, out.String())
			}
		}
	}
}
