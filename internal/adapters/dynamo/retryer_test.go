package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// countingRetryer is the SDK's adaptive retryer, counting how the SDK asks it for
// each attempt's token: GetAttemptToken (aws.RetryerV2, where the adaptive mode
// holds a request back while DynamoDB throttles) or GetInitialToken (its fallback
// for a retryer without it, which holds nothing back).
type countingRetryer struct {
	aws.RetryerV2
	attempt, initial atomic.Int32
}

func (r *countingRetryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	r.attempt.Add(1)
	return r.RetryerV2.GetAttemptToken(ctx)
}

func (r *countingRetryer) GetInitialToken() func(error) error {
	r.initial.Add(1)
	return func(error) error { return nil }
}

// answersEmpty is DynamoDB answering every request with {}.
type answersEmpty struct{}

func (answersEmpty) Do(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(bytes.NewReader([]byte("{}"))), Request: r}, nil
}

// TestATransactionKeepsTheRetryersRateLimit: a transaction (AppendStreams, and an
// Append of several events) asks the configured retryer for its attempt tokens as
// every other request does (AWS_RETRY_MODE=adaptive rate-limits there), though the
// store wraps the retryer to retry transactions cancelled only by throttling.
func TestATransactionKeepsTheRetryersRateLimit(t *testing.T) {
	counting := &countingRetryer{RetryerV2: retry.NewAdaptiveMode()}
	cfg := aws.Config{Region: "eu-west-1", HTTPClient: answersEmpty{},
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:     func() aws.Retryer { return counting }}
	store := dynamo.New(dynamodb.NewFromConfig(cfg), "Events")
	event := func(id string) eventstore.Event {
		return eventstore.Event{ID: id, Type: "T", Data: json.RawMessage(`{}`)}
	}
	ctx := context.Background()

	if _, err := store.AppendStreams(ctx, eventstore.StreamAppend{StreamID: "a", Events: []eventstore.Event{event("e1")}},
		eventstore.StreamAppend{StreamID: "b", Events: []eventstore.Event{event("e2")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, "c", 0, event("e3"), event("e4")); err != nil {
		t.Fatal(err)
	}
	if attempt, initial := counting.attempt.Load(), counting.initial.Load(); attempt != 2 || initial != 0 {
		t.Errorf("two transactions asked for %d attempt tokens and %d initial ones; want 2 and 0: the adaptive mode's limit does not hold them", attempt, initial)
	}
}

// throttlesOnce is DynamoDB cancelling the first transaction for throttling alone,
// and answering every later request with {}.
type throttlesOnce struct{ calls atomic.Int32 }

func (d *throttlesOnce) Do(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	if d.calls.Add(1) == 1 {
		body := `{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","message":"Transaction cancelled",` +
			`"CancellationReasons":[{"Code":"None"},{"Code":"ThrottlingError","Message":"Throughput exceeds the current capacity"}]}`
		return &http.Response{StatusCode: http.StatusBadRequest, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
			Body: io.NopCloser(bytes.NewReader([]byte(body))), Request: r}, nil
	}
	return answersEmpty{}.Do(r)
}

// TestATransactionCancelledOnlyByThrottlingIsRetried: the store's retryer retries
// a transaction DynamoDB cancelled for throttling alone, with the same request.
func TestATransactionCancelledOnlyByThrottlingIsRetried(t *testing.T) {
	dynamoDB := &throttlesOnce{}
	cfg := aws.Config{Region: "eu-west-1", HTTPClient: dynamoDB,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:     func() aws.Retryer { return retry.NewStandard() }}
	store := dynamo.New(dynamodb.NewFromConfig(cfg), "Events")
	event := eventstore.Event{ID: "e1", Type: "T", Data: json.RawMessage(`{}`)}
	if _, err := store.AppendStreams(context.Background(), eventstore.StreamAppend{StreamID: "a", Events: []eventstore.Event{event}},
		eventstore.StreamAppend{StreamID: "b", Events: []eventstore.Event{{ID: "e2", Type: "T", Data: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatalf("a transaction throttled once: %v", err)
	}
	if n := dynamoDB.calls.Load(); n != 2 {
		t.Errorf("DynamoDB was sent %d requests; want the throttled transaction and its retry", n)
	}
}
