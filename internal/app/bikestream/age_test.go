package bikestream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var ctx = context.Background()

// suffix makes the i-th 22-character rental suffix of a seeded bike.
func suffix(tag string, i int) string {
	s := fmt.Sprintf("%s%0*d", tag, rental.RentalSuffixLength-len(tag), i)
	return s[len(s)-rental.RentalSuffixLength:]
}

// seed writes a bike's stream as the service would have after prior approved and
// returned rentals (registered, then requested, approved, returned for each; the
// first one flagged overdue before its return), straight into the Events table:
// the stream is what the
// new code must serve, whatever wrote it. The first rental also gets its process's
// stream, recording the bike's version; the second (when there is one) gets a
// process that started before the version was recorded, as every process did before
// this design. It returns the rentals, oldest first.
func seed(t testing.TB, client *dynamodb.Client, table string, store *dynamo.Store, bikeID string, prior int) []string {
	t.Helper()
	var events []eventstore.Event
	add := func(e rental.Event) {
		data, _ := json.Marshal(e)
		events = append(events, eventstore.Event{ID: fmt.Sprintf("%s-%d", bikeID, len(events)), Type: e.EventType(), Data: data})
	}
	add(rental.BikeRegistered{BikeID: bikeID})
	var ids []string
	for i := range prior {
		id := rental.NewRentalID(bikeID, suffix("old", i))
		ids = append(ids, id)
		add(rental.BikeRequested{BikeID: bikeID, Renter: "old-renter", RentalID: id})
		add(rental.RequestApproved{BikeID: bikeID, Renter: "old-renter", RentalID: id})
		returned := rental.BikeReturned{BikeID: bikeID, Renter: "old-renter", RentalID: id}
		if i == 0 {
			approved := time.Now().UTC().Add(-3 * time.Hour)
			due := rental.ReturnDue(approved, rental.DefaultPeriod)
			add(rental.ReturnOverdue{BikeID: bikeID, Renter: "old-renter", RentalID: id, ApprovedAt: approved, DueAt: due, FlaggedAt: due.Add(time.Minute)})
			returned.Late = rental.Lateness{DueAt: due, ReturnedAt: due.Add(time.Hour), Seconds: 3600}
		}
		add(returned)
	}
	// Unconditional batch writes of the items the store would have written: the
	// emulator takes a transaction of 99 conditional puts in seconds.
	stream := rental.StreamID(bikeID)
	for at := 0; at < len(events); at += 25 {
		var puts []types.WriteRequest
		for i, e := range events[at:min(at+25, len(events))] {
			e.RecordedAt = time.Now().UTC()
			item := dynamo.EncodeRecord(eventstore.Record{StreamID: stream, Version: int64(at + i + 1), Event: e})
			puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
		}
		for pending := map[string][]types.WriteRequest{table: puts}; len(pending) > 0; {
			out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				t.Fatal(err)
			}
			pending = out.UnprocessedItems
		}
	}
	for i, id := range ids[:min(2, len(ids))] {
		start := rentalpayment.RentalPaymentRequested{RentalID: id, BikeID: bikeID, Renter: "old-renter", Amount: 1500, Currency: "EUR"}
		if i == 0 {
			start.BikeVersion = 2 // its BikeRequested, right after the registration
		}
		done := rentalpayment.RentalPaymentProcessCompleted{RentalID: id, Outcome: rentalpayment.CompletedApproved}
		a, _ := json.Marshal(start)
		b, _ := json.Marshal(done)
		if _, err := store.Append(ctx, rentalpayment.StreamID(id), 0,
			eventstore.Event{ID: "start-" + id, Type: rentalpayment.TypeRequested, Data: a},
			eventstore.Event{ID: "done-" + id, Type: rentalpayment.TypeCompleted, Data: b}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// cost is what one operation read.
type cost struct {
	calls int
	units float64
}

func (c cost) String() string {
	return fmt.Sprintf("%d calls, %s read units", c.calls, strconv.FormatFloat(c.units, 'f', -1, 64))
}

// ages are the histories the test runs at: BIKE_HISTORY_SIZES (comma-separated) or
// 0, 10, 100 and 1,000 earlier rentals.
func ages(t *testing.T) []int {
	raw := os.Getenv("BIKE_HISTORY_SIZES")
	if raw == "" {
		return []int{0, 10, 100, 1000}
	}
	var out []int
	for _, f := range strings.Split(raw, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			t.Fatalf("BIKE_HISTORY_SIZES=%q: want whole numbers", raw)
		}
		out = append(out, n)
	}
	return out
}

// TestBikeCommandsReadTheSameAtAnyAge runs a new rental's bike commands (the
// request, the approval, the return) and its view on bikes with 0, 10, 100 and 1,000
// earlier rentals, counting every DynamoDB call through the real SDK on moto: what
// they read must not grow with the bike's history. A repeated request and a repeated
// return of the bike's first rental, and that rental's view, get the same answers as
// on a new bike; so does a rental whose process recorded no bike version (found by a
// backward search, whose cost grows with how far back it is, and is not asserted).
func TestBikeCommandsReadTheSameAtAnyAge(t *testing.T) {
	plain, table := emulatortest.EventsTable(t)
	seedStore := dynamo.New(plain, table)
	counter := capacity.NewCounter(plain)
	cfg := emulatortest.Config(t)
	cfg.APIOptions = append(cfg.APIOptions, counter.Middleware("command"))
	counted := dynamo.New(dynamodb.NewFromConfig(cfg), table)
	// The handler's clock is past every new rental's due time, so that each is
	// flagged overdue before its return.
	commands := command.New(counted, command.WithClock(func() time.Time { return time.Now().Add(rental.DefaultPeriod + time.Minute) }))

	measure := func(what string, op func() error) cost {
		t.Helper()
		counter.Reset()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		tot := capacity.Total(counter.Calls())
		return cost{tot.Calls, tot.ReadUnits}
	}
	type row struct {
		age                                 int
		request, approve, view, flag, retrn cost
		again                               cost
	}
	var rows []row
	for _, age := range ages(t) {
		bikeID := fmt.Sprintf("age-%d", age)
		old := seed(t, plain, table, seedStore, bikeID, age)
		id := rental.NewRentalID(bikeID, suffix("new", age))
		renterName := "renter-" + bikeID
		r := row{age: age}
		r.request = measure("request", func() error {
			res, err := commands.Bike(ctx, rental.RequestBike{BikeID: bikeID, Renter: renterName, RentalID: id}, command.Meta{})
			if err == nil && len(res.Appended) != 2 {
				err = fmt.Errorf("appended %d events, want BikeRequested and the renter's RentalRequested", len(res.Appended))
			}
			return err
		})
		r.approve = measure("approve", func() error {
			_, err := commands.Bike(ctx, rental.ApproveRequest{BikeID: bikeID, Renter: renterName, RentalID: id}, command.Meta{})
			return err
		})
		r.view = measure("view", func() error {
			v, err := rentalview.Load(ctx, counted, id)
			if err == nil && (v.Renter != renterName || len(v.History) != 2) {
				err = fmt.Errorf("view %+v, want its request and approval", v)
			}
			return err
		})
		r.flag = measure("flag", func() error {
			got, err := commands.FlagOverdueReturn(ctx, id, command.Meta{})
			if err == nil && got.Outcome != command.OverdueFlagged {
				err = fmt.Errorf("flag: %+v, want flagged", got)
			}
			return err
		})
		r.retrn = measure("return", func() error {
			_, err := commands.Bike(ctx, rental.ReturnBike{BikeID: bikeID, RentalID: id}, command.Meta{})
			return err
		})
		bike, _, err := commands.LoadBike(ctx, bikeID)
		if err != nil || bike.Status != rental.StatusAvailable {
			t.Fatalf("age %d: the bike after the return: %+v, %v", age, bike, err)
		}
		// A new rental's request, approval, return and view read what they read on a
		// new bike (a request on a bike with more than TailSize events reads one
		// more item: whether its rental id was ever used, by its process's stream).
		if age > 0 {
			r.again = measure("the first rental's repeated request", func() error {
				res, err := commands.Bike(ctx, rental.RequestBike{BikeID: bikeID, Renter: "old-renter", RentalID: old[0]}, command.Meta{})
				if err == nil && len(res.Appended) != 0 {
					err = fmt.Errorf("a repeated request appended %d events", len(res.Appended))
				}
				return err
			})
			if _, err := commands.Bike(ctx, rental.RequestBike{BikeID: bikeID, Renter: "mallory", RentalID: old[0]}, command.Meta{}); err == nil || !strings.Contains(err.Error(), rental.ErrRentalIDInUse.Error()) {
				t.Errorf("age %d: another renter reusing the first rental's id: %v, want ErrRentalIDInUse", age, err)
			}
			if res, err := commands.Bike(ctx, rental.ReturnBike{BikeID: bikeID, RentalID: old[0]}, command.Meta{}); err != nil || len(res.Appended) != 0 {
				t.Errorf("age %d: a repeated return of the first rental: %+v, %v; want it answered as done", age, res, err)
			}
			for _, o := range old[:min(2, len(old))] {
				v, err := rentalview.Load(ctx, counted, o)
				if err != nil || v.Status != rentalview.StatusReturned || v.Renter != "old-renter" || len(v.History) < 3 {
					t.Errorf("age %d: the view of %s: %+v, %v; want it returned, with its three bike events", age, o, v, err)
				}
				if late := v.Overdue; o == old[0] && (late == nil || late.LateSeconds == nil || *late.LateSeconds != 3600) {
					t.Errorf("age %d: the first rental, returned an hour late, shows %+v", age, late)
				}
			}
		}
		rows = append(rows, r)
	}

	var out strings.Builder
	fmt.Fprintln(&out, "| earlier rentals of the bike | request | approval | view | overdue flag | return | a repeat of the first rental's request |")
	fmt.Fprintln(&out, "| --- | --- | --- | --- | --- | --- | --- |")
	for _, r := range rows {
		again := "-"
		if r.age > 0 {
			again = r.again.String()
		}
		fmt.Fprintf(&out, "| %d | %s | %s | %s | %s | %s | %s |\n", r.age, r.request, r.approve, r.view, r.flag, r.retrn, again)
	}
	t.Logf("what a new rental's bike commands and view read, by the bike's age:\n%s", out.String())

	// The counts are exact: every read here is one strongly consistent page well
	// under 4 KB, one read unit. The request reads the bike's tail and the renter's
	// newest event and appends both in one transaction; on a bike with more than
	// TailSize events it also reads the stream of the process its rental id would
	// have, to know the id was never used. The approval, the overdue flag and the
	// return read the tail and append; the view reads the payment's and the process's streams and the
	// rental's records on its bike.
	want := map[string]cost{"approve": {2, 1}, "view": {3, 3}, "flag": {2, 1}, "return": {2, 1}}
	for _, r := range rows {
		wantRequest := cost{3, 2}
		if r.age > 0 {
			wantRequest = cost{4, 3}
		}
		for name, got := range map[string]cost{"request": r.request, "approve": r.approve, "view": r.view, "flag": r.flag, "return": r.retrn} {
			w := want[name]
			if name == "request" {
				w = wantRequest
			}
			if got != w {
				t.Errorf("%d earlier rentals: %s %s, want %s", r.age, name, got, w)
			}
		}
		// The tail, the process's stream, and the rental's four versions on its bike.
		if r.age > 0 && r.again != (cost{3, 3}) {
			t.Errorf("%d earlier rentals: the first rental's repeated request read %s, want 3 calls, 3 read units", r.age, r.again)
		}
	}
}
