package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `=== RUN   TestBikeCommandsReadTheSameAtAnyAge
        | earlier rentals of the bike | request | approval | view | return | a repeat of the first rental's request |
        | --- | --- | --- | --- | --- | --- |
        | 0 | 3 calls, 2 read units | 2 calls, 1 read units | 3 calls, 3 read units | 2 calls, 1 read units | - |
        | 1000 | 4 calls, 3 read units | 2 calls, 1 read units | 3 calls, 3 read units | 2 calls, 1 read units | 3 calls, 3 read units |
--- PASS: TestBikeCommandsReadTheSameAtAnyAge (1.00s)
`

func TestParseAddsWhatTheBikeCommandsReadMore(t *testing.T) {
	got, err := Parse(strings.NewReader(sample), 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (Point{0, 9}) || got[1] != (Point{1000, 10}) {
		t.Errorf("Parse = %+v, want 9 read units at 0 and 10 at 1,000", got)
	}
	if _, err := Parse(strings.NewReader("no table here"), 9); err == nil {
		t.Error("Parse of no results: no error")
	}
}

func TestRunWritesTheChartAndTheTable(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.txt")
	out := filepath.Join(t.TempDir(), "chart.svg")
	if err := os.WriteFile(in, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := run([]string{"-in", in, "-out", out, "-before", "0:9,1000:882"}, nil, &table); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(out)
	if err != nil || !bytes.HasPrefix(svg, []byte("<svg")) || !bytes.Contains(svg, []byte(">882<")) || !bytes.Contains(svg, []byte(">10<")) {
		t.Errorf("the chart lacks its series' labels: %v\n%s", err, svg)
	}
	if !strings.Contains(table.String(), "| 1000 | 882 | 10 |") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := run([]string{"-in", in}, nil, &table); err == nil {
		t.Error("no -out: no error")
	}
}
