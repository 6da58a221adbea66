package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/audit"
)

// kinds are the service's kinds under the default policy, as the fakes project
// them.
var kinds = deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{})

// tables is a hand-written stand-in for the Events table, streams of items in the
// order given, and an index in memory for the Deadlines table, holding the rows of
// the records projected into it (project), whatever the streams say.
type tables struct {
	streams map[string][]audit.Item
	order   []string // the listing, duplicates included
	index   *memory.Index
	failOn  string // a stream whose read fails
}

// rows returns the index, empty until something is projected into it.
func (f *tables) rows() *memory.Index {
	if f.index == nil {
		f.index = memory.New(kinds, 2)
	}
	return f.index
}

// project applies records to the index, as the projector would.
func (f *tables) project(t *testing.T, records ...eventstore.Record) {
	t.Helper()
	for _, r := range records {
		if err := f.rows().Apply(context.Background(), dynamo.RecordOf(r)); err != nil {
			t.Fatalf("project %s version %d: %v", r.StreamID, r.Version, err)
		}
	}
}

// projectAll projects every record of every stream, in each stream's order: a
// projector that missed nothing.
func (f *tables) projectAll(t *testing.T) {
	t.Helper()
	for _, id := range slices.Sorted(maps.Keys(f.streams)) {
		for _, it := range f.streams[id] {
			if it.Err == nil {
				f.project(t, it.Record)
			}
		}
	}
}

// record returns the record of stream at version.
func (f *tables) record(t *testing.T, stream string, version int64) eventstore.Record {
	t.Helper()
	for _, it := range f.streams[stream] {
		if it.Version == version {
			return it.Record
		}
	}
	t.Fatalf("no version %d in %s", version, stream)
	return eventstore.Record{}
}

func (f *tables) StreamIDs(ctx context.Context, fn func(string) error) error {
	for _, id := range f.order {
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

func (f *tables) ReadStream(ctx context.Context, id string, fn func(audit.Item) error) error {
	if id == f.failOn {
		return errors.New("throttled")
	}
	for _, it := range f.streams[id] {
		if err := fn(it); err != nil {
			return err
		}
	}
	return nil
}

// add appends an event to a stream at version, listing the stream once per item as a
// Scan of the whole table would.
func (f *tables) add(stream string, version int64, at time.Time, e any, typ string) {
	data, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	if f.streams == nil {
		f.streams = map[string][]audit.Item{}
	}
	f.streams[stream] = append(f.streams[stream], audit.Item{StreamID: stream, Version: version, Record: eventstore.Record{
		StreamID: stream, Version: version, Event: eventstore.Event{ID: fmt.Sprint(stream, version), Type: typ, Data: data, RecordedAt: at},
	}})
	f.order = append(f.order, stream)
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// outstandingRental is a rental whose payment was prepared at preparedAt and never
// settled, every event delivered but the projection's.
func outstandingRental(f *tables, bikeID string, preparedAt time.Time) string {
	id := rentalID(bikeID, "Fake")
	ref := payment.ReferenceFor(id)
	f.add(rental.StreamID(bikeID), 1, preparedAt, rental.BikeRegistered{BikeID: bikeID}, "BikeRegistered")
	f.add(rental.StreamID(bikeID), 2, preparedAt, rental.BikeRequested{BikeID: bikeID, Renter: "alice", RentalID: id}, "BikeRequested")
	f.add(payment.StreamID(ref), 1, preparedAt, payment.PaymentPrepared{Reference: ref, PaymentID: "p", Amount: 1, Currency: "EUR"}, "PaymentPrepared")
	f.add(rentalpayment.StreamID(id), 1, preparedAt, rentalpayment.RentalPaymentRequested{RentalID: id, BikeID: bikeID}, rentalpayment.TypeRequested)
	return id
}

func run(t *testing.T, f *tables, opts audit.Options) audit.Report {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return t0 }
	}
	opts.Kinds = kinds
	report, err := audit.Run(context.Background(), f, f.rows(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return report
}

var _ deadlines.Index = (*memory.Index)(nil)

func TestStreamsListedManyTimesAreReadOnce(t *testing.T) {
	f := &tables{}
	outstandingRental(f, "b1", t0.Add(-time.Hour))
	f.order = append(f.order, f.order...)
	f.projectAll(t) // a payment due and a process stuck
	report := run(t, f, audit.Options{Quiet: true})
	if !report.OK() || report.Streams != 3 || report.Records != 4 || report.Rentals != 1 || report.Payments != 1 || report.DeadlineRows != 2 {
		t.Errorf("report %+v, want 3 streams and 4 records read once, 2 rows, no violation", report)
	}
}

func TestVersionProblems(t *testing.T) {
	cases := []struct {
		name     string
		versions []int64
		want     string // the detail, "" for none
	}{
		{"in order", []int64{1, 2, 3}, ""},
		{"gap of one", []int64{1, 3}, "missing version 2"},
		{"gap of several", []int64{1, 2, 6}, "missing versions 3 to 5"},
		{"no first version", []int64{2, 3}, "missing version 1"},
		{"duplicate", []int64{1, 2, 2, 3}, "duplicate version 2"},
		{"out of order", []int64{1, 3, 2}, "missing version 2, version 2 out of order after 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &tables{}
			for _, v := range c.versions {
				f.add("other-stream", v, t0, map[string]string{}, "Whatever")
			}
			report := run(t, f, audit.Options{Quiet: true})
			var got string
			for _, v := range report.Violations {
				if v.Invariant != audit.VersionGap || !slices.Equal(v.Streams, []string{"other-stream"}) {
					t.Errorf("unexpected %v", v)
				}
				got = v.Detail
			}
			if got != c.want {
				t.Errorf("detail %q, want %q", got, c.want)
			}
		})
	}
}

func TestDriftIsForgivenOnlyWithinTheGracePeriodUnlessQuiet(t *testing.T) {
	cases := []struct {
		name  string
		quiet bool
		age   time.Duration // of the payment, before the Deadlines table's read began
		grace time.Duration
		want  bool
	}{
		{"old, not quiet", false, time.Minute, 0, true},
		{"young, not quiet", false, 10 * time.Second, 0, false},
		{"prepared after the read began, not quiet", false, -time.Second, 0, false},
		{"young but past a shorter grace", false, 10 * time.Second, 5 * time.Second, true},
		{"young, quiet", true, 10 * time.Second, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &tables{}
			outstandingRental(f, "b1", t0.Add(-c.age))
			ref := payment.ReferenceFor(rentalID("b1", "Fake"))
			report := run(t, f, audit.Options{Quiet: c.quiet, Grace: c.grace})
			if got := slices.ContainsFunc(report.Violations, func(v audit.Violation) bool {
				return v.Invariant == audit.DeadlineMissing && slices.Equal(v.Streams, []string{payment.StreamID(ref)})
			}); got != c.want {
				t.Errorf("deadline-missing of the payment reported: %v, want %v: %v", got, c.want, report.Violations)
			}

			// The same payment, settled at that time, with its row still outstanding.
			f.add(payment.StreamID(ref), 2, t0.Add(-c.age), payment.PaymentConfirmed{Reference: ref}, "PaymentConfirmed")
			f.project(t, f.record(t, payment.StreamID(ref), 1))
			report = run(t, f, audit.Options{Quiet: c.quiet, Grace: c.grace})
			if got := slices.ContainsFunc(report.Violations, func(v audit.Violation) bool { return v.Invariant == audit.DeadlineStale }); got != c.want {
				t.Errorf("deadline-stale reported: %v, want %v: %v", got, c.want, report.Violations)
			}
		})
	}
}

func TestUndecodableItemsAreViolationsNotFailures(t *testing.T) {
	f := &tables{}
	id := outstandingRental(f, "b1", t0.Add(-time.Hour))
	f.projectAll(t)
	bike := rental.StreamID("b1")
	f.streams[bike] = append(f.streams[bike],
		audit.Item{StreamID: bike, Version: 3, Err: fmt.Errorf("%w: missing data", eventstore.ErrCorruptRecord)},
		audit.Item{StreamID: bike, Version: 0, Err: fmt.Errorf("%w: version \"x\"", eventstore.ErrCorruptRecord)},
	)
	f.add(rentalpayment.StreamID(id), 2, t0, map[string]string{}, "SomethingElse")
	report := run(t, f, audit.Options{Quiet: true})
	var got []string
	for _, v := range report.Violations {
		got = append(got, v.String())
	}
	want := []string{
		"corrupt-record bike-b1: an item with an unreadable version: eventstore: stored record is corrupt: version \"x\"",
		"corrupt-record bike-b1: version 3: eventstore: stored record is corrupt: missing data",
		`corrupt-record rentalpayment-b1_Fakexxxxxxxxxxxxxxxxxx: version 2 (SomethingElse): rentalpayment: unknown event type "SomethingElse"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if report.Records != 7 {
		t.Errorf("%d records, want 7: corrupt ones count", report.Records)
	}
}

func TestReadFailuresAndCancellationStopTheAudit(t *testing.T) {
	f := &tables{}
	outstandingRental(f, "b1", t0)
	f.failOn = rental.StreamID("b1")
	if _, err := audit.Run(context.Background(), f, f.rows(), audit.Options{}); err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Errorf("Run = %v, want the read failure", err)
	}

	f.failOn = ""
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := audit.Run(cancelled, f, f.rows(), audit.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}
