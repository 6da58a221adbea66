package main

import (
	"os"
	"testing"
)

// TestDemosKeepTheirOwnLogs: two demos at once write their stacks' logs to two
// files, neither overwriting the other.
func TestDemosKeepTheirOwnLogs(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for _, line := range []string{"first demo\n", "second demo\n"} {
		f, err := createLog(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		names = append(names, f.Name())
	}
	if names[0] == names[1] {
		t.Fatalf("both demos log to %s", names[0])
	}
	for i, want := range []string{"first demo\n", "second demo\n"} {
		got, err := os.ReadFile(names[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s holds %q, want %q", names[i], got, want)
		}
	}
}
