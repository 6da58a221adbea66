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

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/owed"
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

// Seeding: a row of each kind (and an owed cancellation put off, and a parked
// record not due yet) written by the projection, then cloned straight into the
// table, spread over the shards.
const (
	boundShards  = 4
	clonesOfEach = 2000
	// page is what "a page" allows beyond the limit, per shard and lane.
	page = 100
	// paymentEvents bounds the events of a payment's stream, which a listing reads
	// to say what each refund row it returns owes (decision 33): prepared, settled,
	// a late success and its refund's events, a refund owed on another provider
	// payment and its settlement, a few times over.
	paymentEvents = 20
)

// seedTemplates writes one row of each sort into the table through the projection
// the service writes with, as of now, and returns the rental ids they are about.
// Every deadline is outstanding and none is overdue at now, the owed cancellation
// is put off and the parked record not due yet: in the layout before decision 26
// the payments' lane and the backlog's hold rows of other sorts that sort before
// those of the kind a listing asks for.
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
	bikeRecord := func(rentalID string, v int64, e rental.Event, at time.Time) eventstore.Record {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		bike, _ := rental.BikeIDOf(rentalID)
		return eventstore.Record{StreamID: rental.StreamID(bike), Version: v, Event: eventstore.Event{
			ID: fmt.Sprintf("%s-%d", bike, v), Type: e.EventType(), Data: data, RecordedAt: at}}
	}
	pay, stuck, ret, over, refund, owed, parked := id("tplpay"), id("tplstuck"), id("tplret"), id("tplover"), id("tplrefund"), id("tplowed"), id("tplparked")
	ref := payment.ReferenceFor
	records := []eventstore.Record{
		paymenttest.Record(t, payment.PaymentPrepared{PaymentID: "p1", Reference: ref(pay), Amount: 1500, Currency: "EUR"}, 1, now.Add(-time.Minute)),
		bikeRecord(stuck, 2, rental.BikeRequested{BikeID: "tplstuck", Renter: "r", RentalID: stuck}, now.Add(-time.Minute)),
		bikeRecord(ret, 2, rental.BikeRequested{BikeID: "tplret", Renter: "r", RentalID: ret}, now.Add(-2*time.Hour-10*time.Minute)),
		bikeRecord(ret, 3, rental.RequestApproved{BikeID: "tplret", Renter: "r", RentalID: ret}, now.Add(-2*time.Hour+5*time.Minute)),
		bikeRecord(over, 2, rental.BikeRequested{BikeID: "tplover", Renter: "r", RentalID: over}, now.Add(-3*time.Hour-10*time.Minute)),
		bikeRecord(over, 3, rental.RequestApproved{BikeID: "tplover", Renter: "r", RentalID: over}, now.Add(-3*time.Hour)),
		bikeRecord(over, 4, rental.ReturnOverdue{BikeID: "tplover", Renter: "r", RentalID: over, ApprovedAt: now.Add(-3 * time.Hour),
			DueAt: now.Add(-time.Hour), FlaggedAt: now.Add(-50 * time.Minute)}, now.Add(-50*time.Minute)),
		paymenttest.Record(t, payment.RefundOwed{Reference: ref(refund), PaymentID: "p2", Amount: 1500, Currency: "EUR"}, 4, now.Add(-5*time.Minute)),
		paymenttest.Record(t, payment.CancellationOwedAtProvider{Reference: ref(owed), PaymentID: "p3", Attempts: 1}, 3, now.Add(-2*time.Minute)),
		paymenttest.Record(t, payment.CancellationStillOwed{Reference: ref(owed), PaymentID: "p3", Tries: 10}, 4, now.Add(-time.Minute)),
	}
	for _, r := range records {
		if err := p.Apply(ctx, r); err != nil {
			t.Fatalf("seed %s: %v", r.Type, err)
		}
	}
	rec := eventstore.Record{StreamID: rentalpayment.StreamID(parked), Version: 1, Event: eventstore.Event{Type: "RentalPaymentRequested"}}
	if err := p.Park(ctx, eventfilter.Projector, rec, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return []string{pay, stuck, ret, over, refund, owed, parked}
}

// seedClones copies every row of the table that is in the index clonesOfEach
// times, each copy about a rental of its own, spread over the shards, with
// BatchWriteItem.
func seedClones(t *testing.T, client *dynamodb.Client, table string, templates []string) int {
	t.Helper()
	ctx := context.Background()
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)}) // a test's setup, on a table of a few items
	if err != nil {
		t.Fatal(err)
	}
	var puts []types.WriteRequest
	for _, item := range out.Items {
		shard, ok := item[schema.DeadlineKindShard].(*types.AttributeValueMemberS)
		if !ok {
			continue // a marker or the table's settings
		}
		key := item[schema.DeadlineKey].(*types.AttributeValueMemberS).Value
		var of string
		for _, id := range templates {
			if strings.Contains(key, id) {
				of = id
			}
		}
		if of == "" {
			t.Fatalf("row %s is about none of the templates", key)
		}
		lane := strings.TrimRight(shard.Value, "0123456789")
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
			clone[schema.DeadlineKindShard] = &types.AttributeValueMemberS{Value: lane + strconv.Itoa(i%boundShards)}
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

// TestEveryListingAndSweepReadsAboutWhatItReturns fills the to-do table with 2,000
// rows of each sort (every kind of deadline, owed cancellations put off, parked
// records not due yet: 14,000 rows, so that every listing has at least 10,000 of
// sorts other than its own), and counts the Queries and the items DynamoDB reads
// (ScannedCount) for each listing and for an idle sweep, through a proxy in front
// of the emulator: GET /deadlines for every kind and overdue value, GET
// /payments/pending, GET /processes/stuck and GET /refunds/owed through the API;
// rentalctl pending, pending --overdue, pending --kind for every kind and sweep
// --dry-run; and a sweep, through rentalctl sweep. Each reads at most its limit
// plus a page from each shard of each lane it reads, and makes at most two
// Queries of each, and an API listing that may return refund rows one Query more
// per row, of the row's payment stream, to say what it owes; the idle sweep reads at most a page, and a page a shard of the
// owed cancellations put off, which it counts still owed.
func TestEveryListingAndSweepReadsAboutWhatItReturns(t *testing.T) {
	ctx := context.Background()
	client := emulatortest.DynamoDB(t)
	_, events := emulatortest.EventsTable(t)
	table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
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
	if n < 7*clonesOfEach {
		t.Fatalf("seeded %d rows, want %d of each of 7 sorts", n, clonesOfEach)
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
	type reading struct {
		name  string
		limit int
		lanes int // the lanes of the kinds it lists
		// refunds is how many refund rows it may return, each of whose payment
		// streams it reads once to say what the row owes: one Query per row.
		refunds int
		read    func() error
	}
	var readings []reading
	for _, limit := range []int{1, 10} {
		l := strconv.Itoa(limit)
		for _, kind := range append([]string{""}, httpapi.DeadlineKinds...) {
			lanes := 1
			switch kind {
			case "":
				lanes = 5 // payment, stuck, return, overdue return, refund
			case "return":
				lanes = 2 // due and flagged overdue
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
				readings = append(readings, reading{fmt.Sprintf("GET /deadlines %v", params), limit, lanes, refunds, api("/deadlines", params)})
			}
			if kind != "" {
				for _, overdue := range []bool{false, true} {
					readings = append(readings, reading{fmt.Sprintf("rentalctl pending --kind %s --overdue=%t --limit %d", kind, overdue, limit), limit + 1, lanes, 0, func() error {
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
	// An idle sweep: nothing is due, so it returns nothing; it reads at most a
	// page in all, whatever the table holds.
	readings = append(readings, reading{"rentalctl sweep (nothing due)", 0, 0, 0, func() error {
		sum, err := stack.Sweep(ctx, time.Now())
		if err == nil && (sum.Found() > 0 || sum.Owed.Due > 0 || sum.Parked.Found > 0) {
			err = fmt.Errorf("the sweep acted: %+v", sum)
		}
		if err == nil && (sum.Owed.Owed != boundShards*owed.Page || !sum.Owed.More || sum.Owed.Left != sum.Owed.Owed) {
			err = fmt.Errorf("the sweep counted %+v owed; want a page a shard of the %d put off, every one still owed, and more", sum.Owed, clonesOfEach)
		}
		return err
	}})
	for _, r := range readings {
		t.Run(r.name, func(t *testing.T) {
			count := meter.reset()
			err := r.read()
			queries, scanned := count()
			t.Logf("%d Queries read %d items", queries, scanned)
			if err != nil {
				t.Fatalf("%v (after %d Queries reading %d items)", err, queries, scanned)
			}
			maxQueries, maxScanned := 2*boundShards*r.lanes+r.refunds, boundShards*r.lanes*(r.limit+page)+r.refunds*paymentEvents
			if r.lanes == 0 { // the sweep: at most two Queries a shard of each of its at most five lanes
				// Nothing due but the owed cancellations put off, which the sweep
				// counts still owed: at most a page of them a shard (owed.Page),
				// every one of them in its answer.
				maxQueries, maxScanned = 2*boundShards*5, page+boundShards*owed.Page
			}
			if queries > maxQueries || scanned > maxScanned {
				t.Errorf("%d Queries read %d items; want at most %d Queries reading %d items", queries, scanned, maxQueries, maxScanned)
			}
		})
	}
}
