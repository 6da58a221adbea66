package faultproxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/tools/faultproxy"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// upstream is a stand-in for the emulator that counts what reaches it.
func upstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func start(t *testing.T, up string, cfg faultproxy.Config) *faultproxy.Server {
	t.Helper()
	p, err := faultproxy.Start(up, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func post(client *http.Client, url string, hdr map[string]string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return client.Do(req)
}

func TestRateZeroForwardsEverything(t *testing.T) {
	up, hits := upstream(t)
	p := start(t, up.URL, faultproxy.Config{Rate: 0, Seed: 1})
	client := &http.Client{Timeout: 5 * time.Second}
	for range 50 {
		resp, err := post(client, p.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, want 200", resp.StatusCode)
		}
	}
	s := p.Stats()
	if s.Requests != 50 || s.Forwarded != 50 || s.Faulted() != 0 || hits.Load() != 50 {
		t.Fatalf("stats %v, upstream hits %d: want 50 requests all forwarded, no fault", s, hits.Load())
	}
}

// TestRateIsTheShareOfFaults checks that about Rate of the requests get a fault, with
// every configured kind represented, and that the same seed makes the same choices.
func TestRateIsTheShareOfFaults(t *testing.T) {
	run := func() faultproxy.Stats {
		up, _ := upstream(t)
		p := start(t, up.URL, faultproxy.Config{Rate: 0.3, Seed: 42, Kinds: []faultproxy.Kind{faultproxy.Throttle, faultproxy.ServerError}})
		client := &http.Client{Timeout: 5 * time.Second}
		for range 400 {
			resp, err := post(client, p.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return p.Stats()
	}
	a, b := run(), run()
	if share := float64(a.Faulted()) / float64(a.Requests); math.Abs(share-0.3) > 0.08 {
		t.Errorf("share of faults %.2f (%v), want about 0.3", share, a)
	}
	if a.Faults[faultproxy.Throttle] == 0 || a.Faults[faultproxy.ServerError] == 0 || a.Faults[faultproxy.Slow] != 0 {
		t.Errorf("faults by kind %v: want throttles and server errors only", a.Faults)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, different choices: %v, then %v", a, b)
	}
}

func TestEligibleAndSpareFinalAttempt(t *testing.T) {
	up, hits := upstream(t)
	p := start(t, up.URL, faultproxy.Config{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.ServerError},
		Eligible: faultproxy.DynamoDBOnly, SpareFinalAttempt: true})
	client := &http.Client{Timeout: 5 * time.Second}
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"streams call, not eligible", map[string]string{"X-Amz-Target": "DynamoDBStreams_20120810.GetRecords"}, 200},
		{"dynamodb call, first attempt", map[string]string{"X-Amz-Target": "DynamoDB_20120810.PutItem", "amz-sdk-request": "attempt=1; max=4"}, 500},
		{"dynamodb call, last attempt", map[string]string{"X-Amz-Target": "DynamoDB_20120810.PutItem", "amz-sdk-request": "attempt=4; max=4"}, 200},
		{"dynamodb call, no attempt header", map[string]string{"X-Amz-Target": "DynamoDB_20120810.PutItem"}, 500},
	} {
		resp, err := post(client, p.URL, c.hdr)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	s := p.Stats()
	if s.Requests != 4 || s.Spared != 1 || s.Faults[faultproxy.ServerError] != 2 || hits.Load() != 2 {
		t.Errorf("stats %v, upstream hits %d: want 4 requests, 2 faults, 1 spared, 2 forwarded", s, hits.Load())
	}
}

func TestParseKinds(t *testing.T) {
	if k, err := faultproxy.ParseKinds("all"); err != nil || len(k) != len(faultproxy.AllKinds()) {
		t.Errorf("all: %v, %v", k, err)
	}
	if k, err := faultproxy.ParseKinds("throttle, drop-after"); err != nil || len(k) != 2 || k[1] != faultproxy.DropAfter {
		t.Errorf("throttle, drop-after: %v, %v", k, err)
	}
	if _, err := faultproxy.ParseKinds("throttle,meteor"); err == nil {
		t.Error("an unknown kind was accepted")
	}
	if _, err := faultproxy.New("http://127.0.0.1:1", faultproxy.Config{Rate: 1.5}); err == nil {
		t.Error("a rate above 1 was accepted")
	}
}

// table creates a table with a string key "id" on the emulator, directly.
func table(t *testing.T) (*dynamodb.Client, string) {
	direct := emulatortest.DynamoDB(t)
	name := emulatortest.CreateTable(t, direct, func(name string) *dynamodb.CreateTableInput {
		return &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		}
	}, "faults")
	return direct, name
}

// through returns a DynamoDB client that reaches the emulator through a proxy with
// cfg, and the proxy.
func through(t *testing.T, cfg faultproxy.Config, optFns ...func(*dynamodb.Options)) (*dynamodb.Client, *faultproxy.Server) {
	p := start(t, emulatortest.Server(t).Endpoint, cfg)
	awsCfg, err := emulator.Config(context.Background(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	return dynamodb.NewFromConfig(awsCfg, optFns...), p
}

func put(ctx context.Context, c *dynamodb.Client, table, id string) error {
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table),
		Item:      map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	return err
}

func exists(t *testing.T, c *dynamodb.Client, table, id string) bool {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item != nil
}

func oneAttempt(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }

// noWait retries as the SDK's standard retryer does (same retryable and throttling
// errors), three attempts, without waiting between them.
func noWait(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 3
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

func isThrottle(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

func apiCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func TestThrottleIsRetriedAndSurfacesAsThrottling(t *testing.T) {
	direct, tbl := table(t)
	ctx := context.Background()
	cfg := faultproxy.Config{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.Throttle}}

	client, p := through(t, cfg, oneAttempt)
	err := put(ctx, client, tbl, "a")
	var throttled *types.ThrottlingException
	if !errors.As(err, &throttled) || apiCode(err) != "ThrottlingException" {
		t.Fatalf("one attempt: err = %v (%T), want a *types.ThrottlingException", err, err)
	}
	if !isThrottle(err) {
		t.Errorf("the SDK does not see %v as throttling", err)
	}
	if !client.Options().Retryer.IsErrorRetryable(err) {
		t.Errorf("the DynamoDB client's retryer would not retry %v", err)
	}
	if s := p.Stats(); s.Requests != 1 || s.Faults[faultproxy.Throttle] != 1 || s.Forwarded != 0 {
		t.Errorf("stats %v: want one request, throttled, not forwarded", s)
	}

	retrying, p2 := through(t, cfg, noWait)
	err = put(ctx, retrying, tbl, "b")
	if !errors.As(err, &throttled) || !isThrottle(err) {
		t.Fatalf("retries exhausted: err = %v, want a throttling error", err)
	}
	if s := p2.Stats(); s.Requests != 3 || s.Faults[faultproxy.Throttle] != 3 {
		t.Errorf("stats %v: want the SDK to have tried 3 times, each throttled", s)
	}
	if exists(t, direct, tbl, "a") || exists(t, direct, tbl, "b") {
		t.Error("a throttled write reached the table")
	}
}

func TestServerErrorIsRetryable(t *testing.T) {
	direct, tbl := table(t)
	client, p := through(t, faultproxy.Config{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.ServerError}}, oneAttempt)
	err := put(context.Background(), client, tbl, "a")
	var internal *types.InternalServerError
	var status interface{ HTTPStatusCode() int }
	if !errors.As(err, &internal) || !errors.As(err, &status) || status.HTTPStatusCode() != 500 {
		t.Fatalf("err = %v (%T), want a *types.InternalServerError with status 500", err, err)
	}
	if isThrottle(err) || !client.Options().Retryer.IsErrorRetryable(err) {
		t.Errorf("%v: want retryable and not throttling", err)
	}
	if s := p.Stats(); s.Requests != 1 || s.Faults[faultproxy.ServerError] != 1 {
		t.Errorf("stats %v", s)
	}
	if exists(t, direct, tbl, "a") {
		t.Error("a failed write reached the table")
	}
}

func TestSlowForwardsLate(t *testing.T) {
	direct, tbl := table(t)
	client, p := through(t, faultproxy.Config{Rate: 1, Kinds: []faultproxy.Kind{faultproxy.Slow}}, oneAttempt)
	start := time.Now()
	if err := put(context.Background(), client, tbl, "a"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < faultproxy.SlowMin {
		t.Errorf("a slow request took %v, want at least %v", took, faultproxy.SlowMin)
	}
	if s := p.Stats(); s.Faults[faultproxy.Slow] != 1 || s.Forwarded != 1 {
		t.Errorf("stats %v", s)
	}
	if !exists(t, direct, tbl, "a") {
		t.Error("the slow write did not happen")
	}
}

func TestDropsAreConnectionErrors(t *testing.T) {
	for _, c := range []struct {
		kind    faultproxy.Kind
		written bool
	}{
		{faultproxy.DropBefore, false},
		{faultproxy.DropAfter, true}, // the ambiguous case: written, yet the client saw a failure
	} {
		t.Run(string(c.kind), func(t *testing.T) {
			direct, tbl := table(t)
			client, p := through(t, faultproxy.Config{Rate: 1, Kinds: []faultproxy.Kind{c.kind}}, oneAttempt)
			err := put(context.Background(), client, tbl, "a")
			var send *smithyhttp.RequestSendError
			if !errors.As(err, &send) {
				t.Fatalf("err = %v (%T), want a *smithyhttp.RequestSendError", err, err)
			}
			if !client.Options().Retryer.IsErrorRetryable(err) || isThrottle(err) {
				t.Errorf("%v: want retryable and not throttling", err)
			}
			if got := exists(t, direct, tbl, "a"); got != c.written {
				t.Errorf("written = %v, want %v", got, c.written)
			}
			wantForwarded := int64(0)
			if c.written {
				wantForwarded = 1
			}
			if s := p.Stats(); s.Requests != 1 || s.Faults[c.kind] != 1 || s.Forwarded != wantForwarded {
				t.Errorf("stats %v", s)
			}
		})
	}
}

func TestRateZeroPassesDynamoDBThrough(t *testing.T) {
	direct, tbl := table(t)
	client, p := through(t, faultproxy.Config{Rate: 0, Kinds: faultproxy.AllKinds()}, oneAttempt)
	ctx := context.Background()
	for i := range 10 {
		if err := put(ctx, client, tbl, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tbl), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 10 || !exists(t, direct, tbl, "9") {
		t.Errorf("%d items through the proxy, want 10", out.Count)
	}
	if s := p.Stats(); s.Requests != 11 || s.Forwarded != 11 || s.Faulted() != 0 {
		t.Errorf("stats %v: want 11 requests forwarded, no fault", s)
	}
}

func TestSetRate(t *testing.T) {
	up, hits := upstream(t)
	p := start(t, up.URL, faultproxy.Config{Rate: 0, Kinds: []faultproxy.Kind{faultproxy.ServerError}})
	client := &http.Client{Timeout: 5 * time.Second}
	status := func() int {
		resp, err := post(client, p.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := status(); s != 200 {
		t.Fatalf("rate 0: status %d", s)
	}
	if err := p.SetRate(1); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != 500 {
		t.Fatalf("rate 1: status %d", s)
	}
	if err := p.SetRate(0); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != 200 || hits.Load() != 2 {
		t.Fatalf("rate 0 again: status %d, %d forwarded", s, hits.Load())
	}
	if p.SetRate(-0.1) == nil {
		t.Error("a negative rate was accepted")
	}
}
