package ctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/testkit/paymenttest"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
)

// queryMeter is a proxy in front of the emulator that counts the DynamoDB Queries
// every client pointed at it makes and the items they read (ScannedCount), and
// refuses Queries past a budget, so that a listing that reads without bound fails
// fast rather than running for minutes.
type queryMeter struct {
	mu      sync.Mutex
	queries int
	scanned int
	budget  int
	URL     string
}

func newQueryMeter(t *testing.T, budget int) *queryMeter {
	t.Helper()
	target, err := url.Parse(emulatortest.Server(t).Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	m := &queryMeter{budget: budget}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.Header.Get("X-Amz-Target"), ".Query") {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var out struct{ ScannedCount int }
		_ = json.Unmarshal(body, &out) // an error answer reads nothing
		m.mu.Lock()
		m.scanned += out.ScannedCount
		m.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".Query") {
			m.mu.Lock()
			m.queries++
			over := m.queries > m.budget
			m.mu.Unlock()
			if over {
				body := fmt.Sprintf(`{"__type":"com.amazon.coral.validate#ValidationException","message":"over the test's budget of %d queries"}`, m.budget)
				w.Header().Set("Content-Type", "application/x-amz-json-1.0")
				w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, body)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// reset starts a new count and returns a function that reports it.
func (m *queryMeter) reset() func() (queries, scanned int) {
	m.mu.Lock()
	m.queries, m.scanned = 0, 0
	m.mu.Unlock()
	return func() (int, int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.queries, m.scanned
	}
}

// Seeding: a row of each kind written by the projection, then cloned straight into
// the table, spread over the shards, each clone due a millisecond after the one
// before it.
const (
	boundShards  = 4
	clonesOfEach = 2000
	// page is what "a page" allows beyond the limit, per shard and kind.
	page = 100
	// paymentEvents bounds the events of a payment's stream, which a listing reads
	// to say what each refund row it returns owes (decision 33): prepared, settled,
	// a late success and its refund's events, a refund owed on another provider
	// payment and its settlement, a few times over.
	paymentEvents = 20
	// backedOff is how long before now the owed cancellation and the parked record
	// were recorded: their kinds back off (1 minute, doubling, up to an hour or 5
	// minutes), and neither has a send time in the minute before now, so that a
	// sweep at now finds them overdue and holds them back.
	backedOff = 10 * time.Minute
)

// seedTemplates writes one row of each kind into the table through the projection
// the service writes with, as of now, and returns the rental ids they are about.
// The payment due, the process stuck and the return due are not due yet at now;
// the overdue return and the refund owed, which operators work off by hand, are
// overdue, and so are the owed cancellation and the parked record, due since they
// were recorded, but held back at now by their kinds' backoff.
func seedTemplates(t *testing.T, getenv func(string) string, now time.Time) []string {
	t.Helper()
	ctx := context.Background()
	p, err := wiring.DeadlineProjection(emulatortest.Config(t), getenv)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckShards(ctx); err != nil {
		t.Fatal(err)
	}
	id := func(bike string) string { return rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA") }
	record := func(stream string, v int64, e interface{ EventType() string }, at time.Time) eventstore.Record {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return eventstore.Record{StreamID: stream, Version: v, Event: eventstore.Event{
			ID: fmt.Sprintf("%s-%d", stream, v), Type: e.EventType(), Data: data, RecordedAt: at}}
	}
	bike := func(rentalID string) string { b, _ := rental.BikeIDOf(rentalID); return rental.StreamID(b) }
	pay, stuck, ret, over, refund, owed, park := id("tplpay"), id("tplstuck"), id("tplret"), id("tplover"), id("tplrefund"), id("tplowed"), id("tplparked")
	ref := payment.ReferenceFor
	records := []eventstore.Record{
		paymenttest.Record(t, payment.PaymentPrepared{PaymentID: "p1", Reference: ref(pay), Amount: 1500, Currency: "EUR"}, 1, now.Add(-time.Minute)),
		record(bike(stuck), 2, rental.BikeRequested{BikeID: "tplstuck", Renter: "r", RentalID: stuck}, now.Add(-time.Minute)),
		record(bike(ret), 2, rental.BikeRequested{BikeID: "tplret", Renter: "r", RentalID: ret}, now.Add(-2*time.Hour-10*time.Minute)),
		record(bike(ret), 3, rental.RequestApproved{BikeID: "tplret", Renter: "r", RentalID: ret}, now.Add(-2*time.Hour+5*time.Minute)),
		record(bike(over), 2, rental.BikeRequested{BikeID: "tplover", Renter: "r", RentalID: over}, now.Add(-3*time.Hour-10*time.Minute)),
		record(bike(over), 3, rental.RequestApproved{BikeID: "tplover", Renter: "r", RentalID: over}, now.Add(-3*time.Hour)),
		record(bike(over), 4, rental.ReturnOverdue{BikeID: "tplover", Renter: "r", RentalID: over, ApprovedAt: now.Add(-3 * time.Hour),
			DueAt: now.Add(-time.Hour), FlaggedAt: now.Add(-50 * time.Minute)}, now.Add(-50*time.Minute)),
		paymenttest.Record(t, payment.RefundOwed{Reference: ref(refund), PaymentID: "p2", Amount: 1500, Currency: "EUR"}, 4, now.Add(-5*time.Minute)),
		paymenttest.Record(t, payment.CancellationOwedAtProvider{Reference: ref(owed), PaymentID: "p3", Attempts: 1}, 3, now.Add(-backedOff)),
		record(parked.StreamOf(eventfilter.Projector, rentalpayment.StreamID(park)), 1,
			parked.StreamRecordParked{Consumer: eventfilter.Projector, StreamID: rentalpayment.StreamID(park), Version: 1}, now.Add(-backedOff)),
	}
	for _, r := range records {
		if err := p.Apply(ctx, dynamo.RecordOf(r)); err != nil {
			t.Fatalf("seed %s: %v", r.Type, err)
		}
	}
	return []string{pay, stuck, ret, over, refund, owed, park}
}

// The Deadlines table's key attribute, and its index's partition and sort key
// attributes, as deadlines/dynamo defines the table.
var (
	keyAttr   = aws.ToString(deadlinetable.Definition("").KeySchema[0].AttributeName)
	shardAttr = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].KeySchema[0].AttributeName)
	dueAttr   = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].KeySchema[1].AttributeName)
)

// seedClones copies every row of the table that is in the index clonesOfEach
// times, each copy about a rental of its own, spread over the shards of its
// kind's partitions (deadlines/dynamo's "kind#shard"), due a millisecond after the
// copy before it, with BatchWriteItem.
func seedClones(t *testing.T, client *dynamodb.Client, table string, templates []string) int {
	t.Helper()
	ctx := context.Background()
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)}) // a test's setup, on a table of a few items
	if err != nil {
		t.Fatal(err)
	}
	var puts []types.WriteRequest
	for _, item := range out.Items {
		shard, ok := item[shardAttr].(*types.AttributeValueMemberS)
		if !ok {
			continue // a marker or the table's settings
		}
		key := item[keyAttr].(*types.AttributeValueMemberS).Value
		var of string
		for _, id := range templates {
			if strings.Contains(key, id) {
				of = id
			}
		}
		if of == "" {
			t.Fatalf("row %s is about none of the templates", key)
		}
		due, err := strconv.ParseInt(item[dueAttr].(*types.AttributeValueMemberN).Value, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		partition := strings.TrimRight(shard.Value, "0123456789")
		for i := range clonesOfEach {
			bike, _ := rental.BikeIDOf(of)
			id := rental.NewRentalID(bike, fmt.Sprintf("%022d", i))
			clone := make(map[string]types.AttributeValue, len(item))
			for name, v := range item {
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					v = &types.AttributeValueMemberS{Value: strings.ReplaceAll(s.Value, of, id)}
				}
				clone[name] = v
			}
			clone[shardAttr] = &types.AttributeValueMemberS{Value: partition + strconv.Itoa(i%boundShards)}
			clone[dueAttr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(due+int64(i)+1, 10)}
			puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: clone}})
		}
	}
	for start := 0; start < len(puts); start += 25 {
		batch := puts[start:min(start+25, len(puts))]
		for len(batch) > 0 {
			res, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: batch}})
			if err != nil {
				t.Fatal(err)
			}
			batch = res.UnprocessedItems[table]
		}
	}
	return len(puts)
}

// reading is one listing or sweep whose reads TestEveryListingAndSweepReadsAboutWhatItReturns
// counts.
type reading struct {
	name  string
	limit int
	kinds int // the kinds whose rows it lists
	// refunds is how many refund rows it may return, each of whose payment
	// streams it reads once to say what the row owes: one Query per row.
	refunds int
	read    func() error
}

// TestEveryListingAndSweepReadsAboutWhatItReturns fills the Deadlines table with
// 2,001 rows of each kind (14,007 rows, so that every listing has at least 12,000
// of kinds other than its own), and counts the Queries and the items DynamoDB
// reads (ScannedCount) for each listing and for a sweep that sends nothing,
// through a proxy in front of the emulator: GET /deadlines for every kind and
// overdue value, GET /payments/pending, GET /processes/stuck and GET /refunds/owed
// through the API; rentalctl pending, pending --overdue, pending --kind for every
// kind and sweep --dry-run; and a sweep, through rentalctl sweep. Each listing
// reads at most its limit plus a page from each shard of each kind it lists, and
// makes at most two Queries of each, and an API listing that may return refund
// rows one Query more per row, of the row's payment stream, to say what it owes.
// The sweep reads the overdue rows of the kinds it sends commands for and nothing
// else: the owed cancellations and the parked records, every one of which it
// holds back for their backoff and counts in its answer, and no row of the kinds
// not due yet, nor of those worked off by hand.
func TestEveryListingAndSweepReadsAboutWhatItReturns(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	_, events := emulatortest.EventsTable(t)
	table := emulatortest.CreateTable(t, client, deadlinetable.Definition, "deadlines")
	meter := newQueryMeter(t, 100)
	settings := map[string]string{
		"AWS_REGION": emulator.Region, "AWS_ACCESS_KEY_ID": emulator.AccessKey, "AWS_SECRET_ACCESS_KEY": emulator.SecretKey,
		"AWS_ENDPOINT_URL":         meter.URL,
		wiring.EnvEventsTable:      events,
		wiring.EnvDeadlinesTable:   table,
		wiring.EnvDeadlinesShards:  strconv.Itoa(boundShards),
		wiring.EnvWebhookSecret:    "bounded-reads-webhook-secret-0123456789",
		wiring.EnvSweepConcurrency: "4",
	}
	getenv := func(k string) string { return settings[k] }
	now := time.Now()
	start := time.Now()
	n := seedClones(t, client, table, seedTemplates(t, getenv, now))
	t.Logf("seeded %d rows in %s", n, time.Since(start).Round(time.Millisecond))
	if n != 7*clonesOfEach {
		t.Fatalf("seeded %d rows, want %d of each of 7 kinds", n, clonesOfEach)
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := emulator.Config(ctx, meter.URL)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := commandfn.Build(ctx, cfg, getenv, logger)
	if err != nil {
		t.Fatal(err)
	}
	stack, err := ctl.Open(ctx, getenv, logger)
	if err != nil {
		t.Fatal(err)
	}
	readings := listings(ctx, svc, stack)
	readings = append(readings, idleSweep(ctx, stack, now))
	for _, r := range readings {
		t.Run(r.name, func(t *testing.T) {
			count := meter.reset()
			err := r.read()
			queries, scanned := count()
			t.Logf("%d Queries read %d items", queries, scanned)
			if err != nil {
				t.Fatalf("%v (after %d Queries reading %d items)", err, queries, scanned)
			}
			maxQueries, maxScanned := 2*boundShards*r.kinds+r.refunds, boundShards*r.kinds*(r.limit+page)+r.refunds*paymentEvents
			if r.limit == 0 { // the sweep: at most two Queries a shard of each of the five kinds it sends commands for
				// The overdue rows of those kinds: the owed cancellations and the
				// parked records, every one of them in its answer.
				maxQueries, maxScanned = 2*boundShards*5, 2*(clonesOfEach+1)+page
			}
			if queries > maxQueries || scanned > maxScanned {
				t.Errorf("%d Queries read %d items; want at most %d Queries reading %d items", queries, scanned, maxQueries, maxScanned)
			}
		})
	}
}

// listings are the listings of the API and of rentalctl that
// TestEveryListingAndSweepReadsAboutWhatItReturns counts the reads of.
func listings(ctx context.Context, svc *commandfn.Service, stack *ctl.Stack) []reading {
	api := func(path string, params map[string]string) func() error {
		return func() error {
			resp, err := svc.API.Handle(ctx, lambdaevents.APIGatewayV2HTTPRequest{RawPath: path, QueryStringParameters: params,
				RequestContext: lambdaevents.APIGatewayV2HTTPRequestContext{RequestID: "bounded", HTTP: lambdaevents.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET"},
					Authorizer: &lambdaevents.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &lambdaevents.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
						Claims: map[string]string{"sub": "ops", "scope": httpapi.DefaultOperatorScope}, Scopes: []string{httpapi.DefaultOperatorScope}}}}})
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("%s: %d %s", path, resp.StatusCode, resp.Body)
			}
			return err
		}
	}
	var readings []reading
	for _, limit := range []int{1, 10} {
		l := strconv.Itoa(limit)
		for _, kind := range append([]string{""}, ctl.DeadlineKinds...) {
			kinds := 1
			switch kind {
			case "":
				kinds = 7 // every kind
			case deadlinekinds.Return:
				kinds = 2 // due and flagged overdue
			}
			for _, overdue := range []string{"", "true", "false"} {
				params := map[string]string{"limit": l}
				if kind != "" {
					params["kind"] = kind
				}
				if overdue != "" {
					params["overdue"] = overdue
				}
				refunds := 0
				if kind == "" || kind == deadlinekinds.Refund {
					refunds = limit
				}
				readings = append(readings, reading{fmt.Sprintf("GET /deadlines %v", params), limit, kinds, refunds, api("/deadlines", params)})
			}
			if kind != "" {
				for _, overdue := range []bool{false, true} {
					readings = append(readings, reading{fmt.Sprintf("rentalctl pending --kind %s --overdue=%t --limit %d", kind, overdue, limit), limit + 1, kinds, 0, func() error {
						_, err := stack.Deadlines(ctx, kind, ctl.PendingQuery{Overdue: overdue, Limit: limit})
						return err
					}})
				}
			}
		}
		readings = append(readings,
			reading{"GET /payments/pending limit " + l, limit, 1, 0, api("/payments/pending", map[string]string{"limit": l})},
			reading{"GET /processes/stuck limit " + l, limit, 1, 0, api("/processes/stuck", map[string]string{"limit": l})},
			reading{"GET /refunds/owed limit " + l, limit, 1, limit, api("/refunds/owed", map[string]string{"limit": l})},
			reading{"rentalctl pending --limit " + l, limit + 1, 1, 0, func() error {
				_, err := stack.Pending(ctx, ctl.PendingQuery{Limit: limit})
				return err
			}},
			reading{"rentalctl pending --overdue --limit " + l, limit + 1, 1, 0, func() error {
				_, err := stack.Pending(ctx, ctl.PendingQuery{Overdue: true, Limit: limit})
				return err
			}},
			reading{"rentalctl sweep --dry-run --limit " + l, limit + 1, 1, 0, func() error {
				_, err := stack.SweepDryRun(ctx, time.Now(), limit)
				return err
			}},
		)
	}
	return readings
}

// idleSweep is a sweep at now, through rentalctl sweep, that finds nothing to
// send: the rows of the payment due, the process stuck and the return due are not
// due yet, and the owed cancellations and the parked records are held back for
// their backoff. It reads them, and counts each one found and waiting.
func idleSweep(ctx context.Context, stack *ctl.Stack, now time.Time) reading {
	return reading{"rentalctl sweep (nothing sent)", 0, 0, 0, func() error {
		sum, err := stack.Sweep(ctx, now)
		if err != nil {
			return err
		}
		for _, k := range sum.Kinds {
			backsOff := k.Kind == deadlinekinds.Cancellation || k.Kind == deadlinekinds.Redelivery
			switch {
			case k.Acted+k.Declined+k.NothingToDo+k.Failed+k.Left > 0:
				return fmt.Errorf("the sweep sent commands for %s rows: %+v", k.Kind, k)
			case backsOff && (k.Found != clonesOfEach+1 || k.Waiting != k.Found || k.ItemsRead != k.Found):
				return fmt.Errorf("the sweep found %+v; want every one of the %d %s rows read, found and held back", k, clonesOfEach+1, k.Kind)
			case !backsOff && (k.Found > 0 || k.ItemsRead > 0):
				return fmt.Errorf("the sweep read %+v; want none of the %s rows, not due yet", k, k.Kind)
			}
		}
		if len(sum.Kinds) != 5 {
			return fmt.Errorf("the sweep covered %d kinds, want the 5 it sends commands for: %+v", len(sum.Kinds), sum.Kinds)
		}
		return nil
	}}
}
