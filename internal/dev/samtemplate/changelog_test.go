package samtemplate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTheChangelogNamesWhatIsDeployed holds CHANGELOG.md to the template: every
// parameter, output, table, alarm, function setting and metric an alarm watches is
// named there, so that adding or renaming one without writing it down fails.
func TestTheChangelogNamesWhatIsDeployed(t *testing.T) {
	tpl := load(t)
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	changelog := string(b)
	want := map[string]string{}
	for _, p := range tpl.Root().Get("Parameters").Keys() {
		want[p] = "parameter"
	}
	for _, o := range tpl.Root().Get("Outputs").Keys() {
		want[o] = "output"
	}
	for _, typ := range []string{"AWS::DynamoDB::Table", "AWS::CloudWatch::Alarm"} {
		for _, id := range tpl.Resources(typ) {
			want[id] = typ
		}
	}
	for _, v := range tpl.Root().Get("Globals", "Function", "Environment", "Variables").Keys() {
		want[v] = "setting"
	}
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		for _, v := range tpl.Resource(fn).Get("Properties", "Environment", "Variables").Keys() {
			want[v] = "setting of " + fn
		}
	}
	for _, id := range tpl.Resources("AWS::CloudWatch::Alarm") {
		alarm := tpl.Resource(id).Get("Properties")
		names := []string{alarm.Get("MetricName").Str()}
		for _, m := range alarm.Get("Metrics").Items() {
			names = append(names, m.Get("MetricStat", "Metric", "MetricName").Str())
		}
		for _, name := range names {
			if name != "" {
				want[name] = "metric of " + id
			}
		}
	}
	if len(want) < 50 {
		t.Fatalf("read %d names from the template: the template's shape changed under this test", len(want))
	}
	for name, what := range want {
		if !strings.Contains(changelog, "`"+name+"`") {
			t.Errorf("CHANGELOG.md does not name the %s `%s`", what, name)
		}
	}
}
