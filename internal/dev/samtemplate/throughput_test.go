package samtemplate_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
)

// TestStreamConsumersScaleWithTheLoad checks the settings the stream consumers'
// throughput comes from: both mappings take their ParallelizationFactor from
// StreamParallelization, within Lambda's 1 to 10 and played by the local stack with
// the same default; both functions take STREAM_CONCURRENCY from StreamConcurrency,
// with the code's default and bound; and the provider's timeout, with
// the stream handler's margin, fits within every function that calls the provider.
func TestStreamConsumersScaleWithTheLoad(t *testing.T) {
	tpl := load(t)
	params := tpl.Root().Get("Parameters")
	number := func(name, field string) int {
		t.Helper()
		n, err := strconv.Atoi(params.Get(name, field).Str())
		if err != nil {
			t.Fatalf("parameter %s: %s: %v", name, field, err)
		}
		return n
	}
	if got := number("StreamParallelization", "Default"); got != local.DefaultParallelization {
		t.Errorf("StreamParallelization defaults to %d, the local stack's mappings to %d", got, local.DefaultParallelization)
	}
	if number("StreamParallelization", "MinValue") != 1 || number("StreamParallelization", "MaxValue") != streampoll.MaxParallelization {
		t.Errorf("StreamParallelization is not bounded by 1 and %d, as ParallelizationFactor", streampoll.MaxParallelization)
	}
	if got := number("StreamConcurrency", "Default"); got != awslambda.DefaultConcurrency {
		t.Errorf("StreamConcurrency defaults to %d, the code to %d", got, awslambda.DefaultConcurrency)
	}
	if number("StreamConcurrency", "MinValue") != 1 || number("StreamConcurrency", "MaxValue") != awslambda.MaxConcurrency {
		t.Errorf("StreamConcurrency is not bounded by 1 and %d, as STREAM_CONCURRENCY", awslambda.MaxConcurrency)
	}
	for mapping, fn := range map[string]string{"ProcessStreamMapping": "ProcessFunction", "ProjectorStreamMapping": "ProjectorFunction"} {
		factor := tpl.Resource(mapping).Get("Properties", "ParallelizationFactor")
		if factor.Tag() != "!Ref" || factor.Str() != "StreamParallelization" {
			t.Errorf("%s: ParallelizationFactor %s %s, want !Ref StreamParallelization", mapping, factor.Tag(), factor.Str())
		}
		c := tpl.Resource(fn).Get("Properties", "Environment", "Variables", "STREAM_CONCURRENCY")
		if c.Tag() != "!Ref" || c.Str() != "StreamConcurrency" {
			t.Errorf("%s: STREAM_CONCURRENCY %s %s, want !Ref StreamConcurrency", fn, c.Tag(), c.Str())
		}
	}

	timeout, err := time.ParseDuration(params.Get("PaymentProviderTimeout", "Default").Str())
	if err != nil || timeout != command.DefaultProviderTimeout {
		t.Errorf("PaymentProviderTimeout defaults to %s (%v), the code to %s", params.Get("PaymentProviderTimeout", "Default").Str(), err, command.DefaultProviderTimeout)
	}
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		props := tpl.Resource(fn).Get("Properties")
		if !props.Get("Environment", "Variables", "PAYMENT_PROVIDER_TIMEOUT").Exists() {
			continue
		}
		limit := props.Get("Timeout").Str()
		if limit == "" {
			limit = tpl.Root().Get("Globals", "Function", "Timeout").Str()
		}
		seconds, err := strconv.Atoi(limit)
		if err != nil {
			t.Fatalf("%s: Timeout %q: %v", fn, limit, err)
		}
		if timeout+awslambda.DefaultStreamMargin >= time.Duration(seconds)*time.Second {
			t.Errorf("%s: a provider call of %s and the %s margin do not fit its %ds timeout", fn, timeout, awslambda.DefaultStreamMargin, seconds)
		}
	}
}
