package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/dev/demo"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

// unreliable wraps a stream function the way at-least-once delivery and crashes
// treat it: every batch is delivered twice, and every third invocation "crashes"
// after the function did its work, before Lambda hears back, so the batch is
// delivered again.
type unreliable struct {
	local.Invoker
	calls, crashes atomic.Int64
}

var errCrash = errors.New("injected crash after the work, before the answer")

func (u *unreliable) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	n := u.calls.Add(1)
	if _, err := u.Invoker.Invoke(ctx, payload); err != nil {
		return nil, err
	}
	out, err := u.Invoker.Invoke(ctx, payload) // the duplicate delivery
	if err == nil && n%3 == 0 {
		u.crashes.Add(1)
		return nil, errCrash
	}
	return out, err
}

// snapshot reads every item of a table, keys and attributes, as text, sorted.
func snapshot(t *testing.T, client *dynamodb.Client, table string) []string {
	t.Helper()
	var out []string
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			out = append(out, text(&types.AttributeValueMemberM{Value: item}))
		}
	}
	slices.Sort(out)
	return out
}

// text renders an attribute value, maps with sorted keys.
func text(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("S:%q", v.Value)
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint("BOOL:", v.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = text(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(v.Value))
		for k := range v.Value {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + text(v.Value[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprintf("%T", v)
}

// TestUnreliableDeliveryCrashesAndAPoisonRecord runs the whole story with every
// stream batch delivered twice, a crash injected into every third invocation of the
// process and the projector, and a corrupt item written straight into the Events
// table first. The story must end as it does on a calm day, the poison record must
// reach the dead-letter destination of both consumers without holding anything up,
// and replaying the whole stream into both consumers afterwards must change nothing.
func TestUnreliableDeliveryCrashesAndAPoisonRecord(t *testing.T) {
	server := emulatortest.Server(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := server.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)
	eventsTable, deadlinesTable := emulatortest.TableName(t, "events"), emulatortest.TableName(t, "pending")
	settings := map[string]string{
		wiring.EnvEventsTable: eventsTable, wiring.EnvDeadlinesTable: deadlinesTable,
		wiring.EnvWebhookSecret: local.DefaultWebhookSecret, wiring.EnvPaymentTimeout: "3s",
	}
	getenv := func(k string) string { return settings[k] }
	logger := slog.New(slog.DiscardHandler)
	// The one local stack, on the test's emulator, the stream consumers unreliable.
	var process, projector *unreliable
	up, err := local.StartWith(ctx, local.Options{AWS: &cfg, Getenv: getenv, SweepInterval: time.Second, Logger: logger, MaxRetryAttempts: 2,
		Wrap: func(function string, inv local.Invoker) local.Invoker {
			switch function {
			case lambdas.Process:
				process = &unreliable{Invoker: inv}
				return process
			case lambdas.Projector:
				projector = &unreliable{Invoker: inv}
				return projector
			}
			return inv
		}})
	if err != nil {
		t.Fatal(err)
	}
	stack := up.Stack

	// The poison record: an Events item without data or event id, of a type that
	// wakes both consumers (each is delivered only the types it acts on, so a record
	// of no type would reach neither).
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(eventsTable), Item: map[string]types.AttributeValue{
		schema.EventsStreamID: &types.AttributeValueMemberS{Value: "payment-poison"},
		schema.EventsVersion:  &types.AttributeValueMemberN{Value: "1"},
		schema.EventsType:     &types.AttributeValueMemberS{Value: "PaymentCancelled"},
	}}); err != nil {
		t.Fatal(err)
	}

	listener, err := local.Listen(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- stack.Run(ctx, listener) }()

	var narration strings.Builder
	if err := demo.Run(ctx, demo.Config{BaseURL: "http://" + listener.Addr().String(), WebhookSecret: []byte(local.DefaultWebhookSecret),
		Out: &narration, Wait: 90 * time.Second}); err != nil {
		t.Fatalf("the story did not hold under unreliable delivery: %v\n%s", err, narration.String())
	}
	// The story is over once every rental reads as ended; the projector may still be
	// a poll behind, closing the last processes' open rows.
	listing, err := wiring.DeadlinesReader(cfg, getenv)
	if err != nil {
		t.Fatal(err)
	}
	for wait := time.Now().Add(30 * time.Second); ; {
		backlog, _, err := listing.Backlog(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(backlog.Open) == 0 {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("processes still open after the story: %+v", backlog.Open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	// Every third invocation crashed (none failed otherwise: the poison record is a
	// batch item failure, not an error), and each consumer crashed at least once.
	for name, u := range map[string]*unreliable{"process": process, "projector": projector} {
		if calls, crashes := u.calls.Load(), u.crashes.Load(); crashes == 0 || crashes != calls/3 {
			t.Errorf("%s: %d crashes in %d invocations, want every third (%d)", name, crashes, calls, calls/3)
		}
	}
	t.Logf("process: %d invocations, %d crashes; projector: %d invocations, %d crashes",
		process.calls.Load(), process.crashes.Load(), projector.calls.Load(), projector.crashes.Load())

	// A dead letter names only where the record is, as Lambda's does: the poison
	// record is found by its place in the stream.
	poison := sequenceOf(t, cfg, eventsTable, "payment-poison")
	poisoned := map[string]bool{}
	for _, dl := range stack.DeadLetters() {
		if dl.StartSequenceNumber != poison || dl.EndSequenceNumber != poison {
			t.Errorf("%s gave up on a healthy record: %+v (the poison record is at %s)", dl.Function, dl, poison)
		}
		if dl.Attempts != 3 {
			t.Errorf("%s gave up on the poison record after %d deliveries, want 3 (MaxRetryAttempts 2)", dl.Function, dl.Attempts)
		}
		poisoned[dl.Function] = true
	}
	if !poisoned["process"] || !poisoned["projector"] {
		t.Errorf("the poison record reached the dead-letter destination of %v, want both consumers", poisoned)
	}

	// Replay the whole stream from its start into both consumers, twice delivered,
	// crashes and all: nothing may change. The stack stopped with its consumers
	// perhaps a poll behind (the last late payment's settlement, say), so a first
	// replay brings both to the stream's end; the second must then change nothing.
	desc, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(eventsTable)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var replayed []string
	replay := func() {
		for name, fn := range map[string]local.Invoker{"process": process, "projector": projector} {
			p := &streampoll.Poller{Client: dynamodbstreams.NewFromConfig(cfg), StreamARN: aws.ToString(desc.Table.LatestStreamArn),
				Logger: logger, MaxRetryAttempts: 2,
				OnFailure: func(context.Context, streampoll.FailedRecord) {
					mu.Lock()
					replayed = append(replayed, name)
					mu.Unlock()
				},
				Handler: func(ctx context.Context, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
					err = local.Call(ctx, fn, ev, &resp)
					return resp, err
				}}
			deadline := time.Now().Add(60 * time.Second)
			for {
				n, _ := p.Poll(context.Background())
				if n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the replay into %s never finished", name)
				}
			}
		}
	}
	replay()
	before := [][]string{snapshot(t, client, eventsTable), snapshot(t, client, deadlinesTable)}
	replay()
	after := [][]string{snapshot(t, client, eventsTable), snapshot(t, client, deadlinesTable)}
	for i, table := range []string{"Events", "Deadlines"} {
		if !slices.Equal(before[i], after[i]) {
			t.Errorf("replaying the stream changed the %s table: %d items before, %d after", table, len(before[i]), len(after[i]))
		}
	}

	// Once quiet, the auditor finds nothing but the poison record itself.
	report, err := audit.Run(context.Background(), audit.NewDynamo(client, eventsTable), listing.Index, audit.Options{Quiet: true, Kinds: listing.Kinds})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range report.Violations {
		if v.Invariant != audit.CorruptRecord || !slices.Equal(v.Streams, []string{"payment-poison"}) {
			t.Errorf("the auditor found %s", v)
		}
	}
	if len(report.Violations) != 1 {
		t.Errorf("the auditor found %d violations, want only the poison record: %v", len(report.Violations), report.Violations)
	}
	t.Logf("audit: %d streams, %d records, %d rentals, %d payments, %d pending rows", report.Streams, report.Records, report.Rentals, report.Payments, report.DeadlineRows)
}

// sequenceOf returns the sequence number of the first stream record of the table's
// stream that belongs to streamID, reading every shard from its start.
func sequenceOf(t *testing.T, cfg aws.Config, table, streamID string) string {
	t.Helper()
	ctx := context.Background()
	desc, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	streams := dynamodbstreams.NewFromConfig(cfg)
	arn := desc.Table.LatestStreamArn
	out, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})
	if err != nil {
		t.Fatal(err)
	}
	for _, shard := range out.StreamDescription.Shards {
		it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: shard.ShardId,
			ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		for iter := it.ShardIterator; iter != nil; {
			page, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Records {
				if id, ok := r.Dynamodb.Keys[schema.EventsStreamID].(*streamtypes.AttributeValueMemberS); ok && id.Value == streamID {
					return aws.ToString(r.Dynamodb.SequenceNumber)
				}
			}
			if len(page.Records) == 0 {
				break
			}
			iter = page.NextShardIterator
		}
	}
	t.Fatalf("no record of %s in the stream", streamID)
	return ""
}
