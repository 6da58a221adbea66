package chartkit_test

import (
	"slices"
	"testing"

	"github.com/bikerental/bikerental/tools/chartkit"
)

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1234567.6: "1,234,568", -100: "-100", -12345: "-12,345"} {
		if got := chartkit.Thousands(v); got != want {
			t.Errorf("Thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestDecadesLabelsEachPowerOfTenInFull(t *testing.T) {
	var labels []string
	minor := 0
	for _, tick := range (chartkit.Decades{}).Ticks(0.5, 100000) {
		if tick.Label == "" {
			minor++
			continue
		}
		labels = append(labels, tick.Label)
	}
	want := []string{"1", "10", "100", "1,000", "10,000", "100,000"}
	if len(labels) != len(want) {
		t.Fatalf("labels %q, want %q", labels, want)
	}
	for i := range want {
		if labels[i] != want[i] {
			t.Errorf("labels %q, want %q", labels, want)
		}
	}
	if minor != 5*8+5 { // 2 to 9 times each decade from 1 to 10,000, and 0.5 to 0.9
		t.Errorf("%d minor ticks, want %d", minor, 5*8+5)
	}
}

func TestDecadesTicksWithinTheAxisOnly(t *testing.T) {
	var labels []string
	minor := 0
	for _, tick := range (chartkit.Decades{}).Ticks(316, 316228) {
		if tick.IsMinor() {
			minor++
			continue
		}
		labels = append(labels, tick.Label)
	}
	if !slices.Equal(labels, []string{"1,000", "10,000", "100,000"}) {
		t.Errorf("major ticks %q, want 1,000, 10,000 and 100,000", labels)
	}
	// 400 to 900, 2,000 to 9,000, 20,000 to 90,000, 200,000 and 300,000.
	if minor != 6+8+8+2 {
		t.Errorf("%d minor ticks, want %d", minor, 6+8+8+2)
	}
}
