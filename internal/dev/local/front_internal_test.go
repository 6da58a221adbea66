package local

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestTheStackThrottlesWhenItsThrottlingIsSet serves the stack's front, as Run does,
// with and without Throttling: make run sets it, the benchmarks do not.
func TestTheStackThrottlesWhenItsThrottlingIsSet(t *testing.T) {
	for name, tc := range map[string]struct {
		throttling *Throttling
		want       []int
	}{
		"throttled":     {&Throttling{Default: Limit{Rate: 0.001, Burst: 2}}, []int{200, 200, 429}},
		"not throttled": {nil, []int{200, 200, 200}},
	} {
		t.Run(name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			s := &Stack{Logger: slog.New(slog.DiscardHandler), Throttling: tc.throttling, Functions: Functions{Command: InProcess(
				func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
					return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
				})}}
			front, err := s.front(l)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for range 3 {
				w := httptest.NewRecorder()
				front.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/bikes/b1", nil))
				got = append(got, w.Code)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("statuses %v, want %v", got, tc.want)
			}
		})
	}
}
