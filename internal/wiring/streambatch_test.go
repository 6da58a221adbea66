package wiring_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/processfn"
	"github.com/bikerental/bikerental/internal/wiring/projectorfn"
)

// TestStreamFunctionsRefuseABadConcurrency checks that the process and the
// projector read STREAM_CONCURRENCY at start and refuse a value they cannot use,
// naming it.
func TestStreamFunctionsRefuseABadConcurrency(t *testing.T) {
	functions := map[string]wiring.Builder{"process": processfn.ProcessFunction, "projector": projectorfn.ProjectorFunction}
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{"", true}, {"1", true}, {"16", true}, {"256", true},
		{"0", false}, {"-3", false}, {"257", false}, {"many", false}, {"1.5", false},
	} {
		for name, build := range functions {
			vars := map[string]string{wiring.EnvEventsTable: "events", wiring.EnvDeadlinesTable: "pending", wiring.EnvStreamConcurrency: tc.value}
			_, err := build(context.Background(), aws.Config{Region: "eu-west-1"}, env(vars), slog.New(slog.DiscardHandler), io.Discard)
			if tc.ok && err != nil {
				t.Errorf("%s with %s=%q: %v", name, wiring.EnvStreamConcurrency, tc.value, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), wiring.EnvStreamConcurrency)) {
				t.Errorf("%s with %s=%q: err = %v, want a refusal naming the setting", name, wiring.EnvStreamConcurrency, tc.value, err)
			}
		}
	}
}
