package samtemplate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// TestTheDeadlinesTableIsTheModules holds template.yaml's Deadlines table equal to
// the resource the deadlines module gives for deployment (deadlinetable
// CloudFormation), which the module holds equal to the definition its tests
// create: the one table the projector writes and the sweep reads, however it is
// made. Only the table's name is the service's own.
func TestTheDeadlinesTableIsTheModules(t *testing.T) {
	snippet := deadlinetable.CloudFormation()
	var indented strings.Builder
	for line := range strings.Lines(snippet) {
		indented.WriteString("  " + line)
	}
	module, err := samtemplate.Parse([]byte("Resources:\n" + indented.String()))
	if err != nil {
		t.Fatalf("the module's resource: %v", err)
	}
	ours := load(t).Resource("DeadlinesTable")
	theirs := module.Resource("DeadlinesTable")
	if !ours.Exists() || !theirs.Exists() {
		t.Fatalf("DeadlinesTable: in template.yaml %v, in the module's resource %v", ours.Exists(), theirs.Exists())
	}
	if diffs := differences(ours, theirs, "DeadlinesTable", "DeadlinesTable.Properties.TableName"); len(diffs) > 0 {
		t.Errorf("template.yaml's DeadlinesTable is not the deadlines module's:\n%s", strings.Join(diffs, "\n"))
	}
	if got := ours.Get("Properties", "TableName"); got.Tag() != "!Sub" || !strings.HasSuffix(got.Str(), "-deadlines") {
		t.Errorf("TableName %s %q: want the stage's deadlines table", got.Tag(), got.Str())
	}
}

// TestTheDeadlinesTableComparisonBites: a table that differs from the module's in
// one attribute's type, one key, a missing setting or an extra one is found.
func TestTheDeadlinesTableComparisonBites(t *testing.T) {
	base := deadlinetable.CloudFormation()
	for _, change := range [][2]string{
		{"AttributeType: N", "AttributeType: S"},
		{"ProjectionType: KEYS_ONLY", "ProjectionType: ALL"},
		{"      Enabled: true\n", ""},
		{"BillingMode: PAY_PER_REQUEST", "BillingMode: PAY_PER_REQUEST\n    TableClass: STANDARD_INFREQUENT_ACCESS"},
	} {
		changed := strings.Replace(base, change[0], change[1], 1)
		if changed == base {
			t.Fatalf("the change %q found nothing to change", change[0])
		}
		a, err1 := samtemplate.Parse([]byte("Resources:\n" + indent(base)))
		b, err2 := samtemplate.Parse([]byte("Resources:\n" + indent(changed)))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if diffs := differences(a.Resource("DeadlinesTable"), b.Resource("DeadlinesTable"), "DeadlinesTable"); len(diffs) == 0 {
			t.Errorf("changing %q to %q went unnoticed", change[0], change[1])
		}
	}
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("  " + line)
	}
	return b.String()
}

// differences lists where a and b differ, by path, skipping the paths in skip.
func differences(a, b samtemplate.Node, path string, skip ...string) []string {
	if slices.Contains(skip, path) {
		return nil
	}
	if a.Exists() != b.Exists() {
		return []string{fmt.Sprintf("%s: present %v and %v", path, a.Exists(), b.Exists())}
	}
	var out []string
	switch {
	case a.Keys() != nil || b.Keys() != nil:
		keys := slices.Concat(a.Keys(), b.Keys())
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			out = append(out, differences(a.Get(k), b.Get(k), path+"."+k, skip...)...)
		}
	case a.Items() != nil || b.Items() != nil:
		ai, bi := a.Items(), b.Items()
		if len(ai) != len(bi) {
			return []string{fmt.Sprintf("%s: %d items and %d", path, len(ai), len(bi))}
		}
		for i := range ai {
			out = append(out, differences(ai[i], bi[i], fmt.Sprintf("%s[%d]", path, i), skip...)...)
		}
	case a.Str() != b.Str() || a.Tag() != b.Tag():
		out = append(out, fmt.Sprintf("%s: %s %q and %s %q", path, a.Tag(), a.Str(), b.Tag(), b.Str()))
	}
	return out
}
