package local_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/local"
)

// TestInProcessInvocationsAtOnceEachGetTheirOwnResult: a function invoked in
// process by many callers at once answers each of them with its own result, as
// Lambda does (the local gateway and the stream pollers invoke one function
// concurrently). Run under the race detector too, as make test does.
func TestInProcessInvocationsAtOnceEachGetTheirOwnResult(t *testing.T) {
	type in struct{ N int }
	type out struct{ Echo string }
	inv := local.InProcess(func(_ context.Context, e in) (out, error) {
		// Long enough that a result read late would be overwritten by the next.
		return out{Echo: strings.Repeat(fmt.Sprint(e.N, ","), 200)}, nil
	})
	const callers, calls = 16, 200
	var wg sync.WaitGroup
	wrong := make(chan string, callers*calls)
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				n := c*calls + i
				var got out
				if err := local.Call(context.Background(), inv, in{N: n}, &got); err != nil {
					wrong <- fmt.Sprintf("call %d: %v", n, err)
					continue
				}
				if want := strings.Repeat(fmt.Sprint(n, ","), 200); got.Echo != want {
					wrong <- fmt.Sprintf("call %d answered %.40q…, want its own result", n, got.Echo)
				}
			}
		})
	}
	wg.Wait()
	close(wrong)
	var seen []string
	for w := range wrong {
		seen = append(seen, w)
	}
	if len(seen) > 0 {
		t.Fatalf("%d of %d invocations got another's result or none; first: %s", len(seen), callers*calls, seen[0])
	}
}
