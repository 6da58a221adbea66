package orders_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// baseline is the count, by the same rule, of the same two deadlines kept as one
// EventBridge Scheduler schedule per item, armed and disarmed from the events
// (the comparison this example is measured against).
const baseline = 67

// uncounted is a line that is blank or only a // comment: the lines
// grep -cvE '^\s*(//.*)?$' leaves out.
var uncounted = regexp.MustCompile(`^\s*(//.*)?$`)

// TestTheRuleIsGrepsRule: blank lines and lines of nothing but a // comment are
// left out, code with a comment after it is counted.
func TestTheRuleIsGrepsRule(t *testing.T) {
	for line, counted := range map[string]bool{"": false, " \t": false, "// doc": false, "\t// note": false, "x := 1 // note": true, "}": true, "/* c */": true} {
		if uncounted.MatchString(line) == counted {
			t.Errorf("%q counted %v, want %v", line, !counted, counted)
		}
	}
}

// TestTheDeadlineGoIsShorterThanTheBaseline counts the lines of the files that are
// the example's Go for its deadlines (deadline-files.txt, the list make
// example-lines prints too) by the baseline's rule, and fails at the baseline's
// count or more.
func TestTheDeadlineGoIsShorterThanTheBaseline(t *testing.T) {
	list, err := os.ReadFile("deadline-files.txt")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range strings.Fields(string(list)) {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(strings.TrimSuffix(string(src), "\n"), "\n") {
			if !uncounted.MatchString(line) {
				n++
			}
		}
		t.Logf("%4d %s", n, name)
		total += n
	}
	t.Logf("%4d in all; the baseline %d", total, baseline)
	if total == 0 || total >= baseline {
		t.Errorf("the deadline Go is %d lines: want fewer than the baseline's %d", total, baseline)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if said := fmt.Sprintf("| | in all | **%d** |", total); !strings.Contains(string(readme), said) {
		t.Errorf("README.md does not give the count, %q", said)
	}
}
