package strictjson_test

import (
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// bodySize is the size of the largest body the API reads, api.MaxBodyBytes.
const bodySize = 16 << 10

func TestDepthScanAllocatesNothing(t *testing.T) {
	body := []byte(`{"reason":"` + strings.Repeat(`\"[{`, bodySize/8) + `"}`)
	allocs := testing.AllocsPerRun(10, func() {
		if strictjson.TooDeep(body, strictjson.MaxDepth) {
			t.Fatal("a flat body with brackets in a string is too deep")
		}
	})
	if allocs != 0 {
		t.Errorf("the depth scan allocates %v times per body, want 0", allocs)
	}
}

func BenchmarkDepthScan(b *testing.B) {
	body := []byte(`{"reason":"` + strings.Repeat(`\"[{`, bodySize/8) + `","x":` + strings.Repeat("[", strictjson.MaxDepth) + strings.Repeat("]", strictjson.MaxDepth) + `}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		strictjson.TooDeep(body, strictjson.MaxDepth)
	}
}
