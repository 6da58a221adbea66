package rebuild_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var ctx = context.Background()

var _ rebuild.Source = (*dynamo.Store)(nil)
var _ rebuild.Projector = (*deadlinetable.Table)(nil)

// recordingCanceller passes CancelRentalPayment on and remembers for which rentals.
type recordingCanceller struct {
	deadlinekinds.Canceller
	mu    sync.Mutex
	asked []string
}

func (c *recordingCanceller) CancelRentalPayment(ctx context.Context, rentalID string, meta command.Meta) (process.Outcome, error) {
	c.mu.Lock()
	c.asked = append(c.asked, rentalID)
	c.mu.Unlock()
	return c.Canceller.CancelRentalPayment(ctx, rentalID, meta)
}

func TestRebuiltProjectionListsExactlyTheOutstandingPaymentsAndTheSweepCancelsOnlyThem(t *testing.T) {
	w := rebuildtest.NewWorld(t)
	var outstanding, settled []string
	for i, how := range []rebuildtest.Settlement{
		rebuildtest.Outstanding, rebuildtest.Confirmed, rebuildtest.Rejected, rebuildtest.Cancelled,
		rebuildtest.Outstanding, rebuildtest.Confirmed, rebuildtest.Rejected, rebuildtest.Cancelled,
		rebuildtest.Outstanding,
	} {
		rentalID := w.Rent(fmt.Sprintf("bike%d", i), how)
		if how == rebuildtest.Outstanding {
			outstanding = append(outstanding, rentalID)
		} else {
			settled = append(settled, rentalID)
		}
	}
	slices.Sort(outstanding)
	projection := w.Projection(3)

	// Given a projection rebuilt from the events,
	var progress []int
	res, err := rebuild.Deadlines(ctx, w.Store, projection, func(done int) { progress = append(progress, done) })
	if err != nil {
		t.Fatal(err)
	}
	// 9 payment streams: PaymentPrepared in each, and one settling event in 6; 9
	// bike streams (registered, requested, and approved or rejected in 6); 9
	// process streams (started, and completed in 6).
	if want := (rebuild.Result{Streams: 27, Records: 15 + 24 + 15}); res != want {
		t.Errorf("result %+v, want %+v", res, want)
	}
	if len(progress) != 27 || progress[26] != 27 {
		t.Errorf("progress %v, want 1 to 27", progress)
	}
	if got := w.Pending(projection); !slices.Equal(got, outstanding) {
		t.Fatalf("pending after rebuild %q, want the outstanding %q", got, outstanding)
	}
	if backlog, _, err := (deadlinekinds.Listing{Index: projection, Kinds: w.Kinds}).Backlog(ctx, time.Now()); err != nil || len(backlog.Open) != len(outstanding) {
		t.Fatalf("open processes after rebuild %+v, %v; want the %d outstanding rentals'", backlog.Open, err, len(outstanding))
	} else {
		for _, o := range backlog.Open {
			if !slices.Contains(outstanding, o.RentalID) {
				t.Errorf("rental %s is open after the rebuild; only the outstanding are", o.RentalID)
			}
		}
	}

	// rebuilding again changes nothing,
	again, err := rebuild.Deadlines(ctx, w.Store, projection, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again != res {
		t.Errorf("second rebuild %+v, first %+v", again, res)
	}
	if got := w.Pending(projection); !slices.Equal(got, outstanding) {
		t.Fatalf("pending after a second rebuild %q, want %q", got, outstanding)
	}

	// when the sweep runs an hour later,
	before := map[string][]eventstore.Record{}
	for _, id := range settled {
		before[id] = w.PaymentOf(id)
	}
	canceller := &recordingCanceller{Canceller: w.Process}
	kinds := deadlinekinds.MustDeclare(deadlinekinds.Policy{Timeout: 15 * time.Minute}, deadlinekinds.Receivers{Canceller: canceller})
	sweeper, err := deadlines.NewSweeper(deadlines.SweeperConfig{Index: projection, Kinds: kinds, Every: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sums, err := sweeper.Sweep(ctx, time.Now().Add(time.Hour), "test")
	if err != nil {
		t.Fatal(err)
	}

	// then exactly the outstanding payments are called off,
	var pay deadlines.KindSummary
	for _, k := range sums {
		if k.Kind == deadlinekinds.Payment {
			pay = k
		}
	}
	if pay.Found != len(outstanding) || pay.Acted != len(outstanding) || pay.Declined+pay.NothingToDo+pay.Failed != 0 {
		t.Errorf("sweep %+v, want %d found and cancelled, nothing else", sums, len(outstanding))
	}
	slices.Sort(canceller.asked)
	if !slices.Equal(canceller.asked, outstanding) {
		t.Errorf("sweep asked to cancel %q, want exactly %q", canceller.asked, outstanding)
	}
	var cancelled []eventstore.Record
	for _, id := range outstanding {
		records := w.PaymentOf(id)
		last := records[len(records)-1]
		if len(records) != 2 || last.Type != "PaymentCancelled" {
			t.Errorf("payment of %s: %d records ending in %s, want PaymentPrepared, PaymentCancelled", id, len(records), last.Type)
		}
		cancelled = append(cancelled, last)
	}
	// the settled ones are untouched,
	for _, id := range settled {
		if after := w.PaymentOf(id); !slices.EqualFunc(after, before[id], sameRecord) {
			t.Errorf("payment of %s changed during the sweep: %d records, were %d", id, len(after), len(before[id]))
		}
	}

	// and once the cancellations are projected, by a rebuild or by the projector
	// receiving them late, nothing is outstanding any more.
	if _, err := rebuild.Deadlines(ctx, w.Store, projection, nil); err != nil {
		t.Fatal(err)
	}
	w.Project(projection, cancelled...)
	if got := w.Pending(projection); len(got) != 0 {
		t.Errorf("pending after the cancellations %q, want none", got)
	}
	// Not even a PaymentPrepared replayed once more brings one back.
	if _, err := rebuild.Deadlines(ctx, w.Store, projection, nil); err != nil {
		t.Fatal(err)
	}
	if got := w.Pending(projection); len(got) != 0 {
		t.Errorf("pending after a third rebuild %q, want none", got)
	}
}

func sameRecord(a, b eventstore.Record) bool {
	return a.StreamID == b.StreamID && a.Version == b.Version && a.ID == b.ID
}

// TestRebuildReadsOnlyTheStreamsItProjects: a rebuild reads the bike's, the
// payment's and the process's streams, and the parking streams, whose records
// open and settle the parked records' rows, and no other (the renter's).
func TestRebuildReadsOnlyTheStreamsItProjects(t *testing.T) {
	w := rebuildtest.NewWorld(t)
	w.Rent("bike1", rebuildtest.Confirmed)
	requested := w.Read(rental.StreamID("bike1"))[1]
	parker := &parked.Parker{Store: w.Store, Consumer: eventfilter.Process, NewID: ident.UUID, Known: eventfilter.Known}
	if err := parker.Park(ctx, requested); err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{Source: w.Store}
	projection := w.Projection(1)
	res, err := rebuild.Deadlines(ctx, src, projection, nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(src.read)
	want := []string{"bike-bike1", parked.StreamOf(eventfilter.Process, "bike-bike1"), "payment-rp_bike1_AAAAAAAAAAAAAAAAAAAAAA", "rentalpayment-bike1_AAAAAAAAAAAAAAAAAAAAAA"}
	slices.Sort(want)
	if res.Streams != 4 || !slices.Equal(src.read, want) {
		t.Errorf("read %d streams, %q; want only the bike's, the payment's, the process's and the parking stream %q", res.Streams, src.read, want)
	}
	// The parked record's row is rebuilt with the rest.
	if list, _, err := (deadlinekinds.Listing{Index: projection, Kinds: w.Kinds}).Parked(ctx); err != nil || len(list) != 1 ||
		list[0].Consumer != eventfilter.Process || list[0].StreamID != requested.StreamID || list[0].Version != requested.Version {
		t.Errorf("parked records after the rebuild: %+v, %v; want %s version %d for the process", list, err, requested.StreamID, requested.Version)
	}
}

// fakeSource wraps a Source, recording the streams read and failing where told.
type fakeSource struct {
	rebuild.Source
	mu     sync.Mutex
	read   []string
	failOn string
}

func (f *fakeSource) Read(ctx context.Context, streamID string, from int64) ([]eventstore.Record, error) {
	f.mu.Lock()
	f.read = append(f.read, streamID)
	f.mu.Unlock()
	if streamID == f.failOn {
		return nil, errBroken
	}
	return f.Source.Read(ctx, streamID, from)
}

var errBroken = errors.New("broken")

// listed is a Source that lists a fixed set of streams, each of n records.
type listed struct {
	ids []string
	n   int
}

func (l listed) StreamIDs(ctx context.Context, prefix string, segments int, fn func(string) error) error {
	for _, id := range l.ids {
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

func (l listed) Read(ctx context.Context, streamID string, from int64) ([]eventstore.Record, error) {
	records := make([]eventstore.Record, l.n)
	for i := range records {
		records[i] = eventstore.Record{StreamID: streamID, Version: int64(i + 1), Event: eventstore.Event{Type: "PaymentPrepared"}}
	}
	return records, nil
}

// projector records what it is given and fails where told.
type projector struct {
	mu      sync.Mutex
	applied map[string][]int64
	failOn  string
	calls   atomic.Int64
}

func (p *projector) Apply(ctx context.Context, r deadlines.Record) error {
	p.calls.Add(1)
	if r.Stream == p.failOn {
		return errBroken
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.applied == nil {
		p.applied = map[string][]int64{}
	}
	p.applied[r.Stream] = append(p.applied[r.Stream], r.Position)
	return nil
}

func TestRebuildAppliesEachStreamInVersionOrder(t *testing.T) {
	var ids []string
	for i := range 100 {
		ids = append(ids, fmt.Sprintf("payment-rp_%d", i))
	}
	p := &projector{}
	var last atomic.Int64
	res, err := rebuild.Deadlines(ctx, listed{ids: ids, n: 5}, p, func(done int) {
		if int64(done) != last.Add(1) {
			t.Errorf("progress %d after %d", done, last.Load()-1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res != (rebuild.Result{Streams: 100, Records: 500}) {
		t.Errorf("result %+v", res)
	}
	for _, id := range ids {
		if got := p.applied[id]; !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
			t.Errorf("%s applied %v, want versions 1 to 5 in order", id, got)
		}
	}
}

func TestRebuildStopsAtTheFirstFailure(t *testing.T) {
	var ids []string
	for i := range 1000 {
		ids = append(ids, fmt.Sprintf("payment-rp_%d", i))
	}
	cases := []struct {
		name string
		src  rebuild.Source
		proj *projector
	}{
		{"read fails", &fakeSource{Source: listed{ids: ids, n: 1}, failOn: "payment-rp_10"}, &projector{}},
		{"apply fails", listed{ids: ids, n: 1}, &projector{failOn: "payment-rp_10"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := rebuild.Deadlines(ctx, c.src, c.proj, nil)
			if !errors.Is(err, errBroken) {
				t.Fatalf("err = %v, want the failure", err)
			}
			if res.Streams >= len(ids) || c.proj.calls.Load() >= int64(len(ids)) {
				t.Errorf("went on after the failure: %+v, %d applied", res, c.proj.calls.Load())
			}
		})
	}
}

func TestRebuildReportsAListingFailure(t *testing.T) {
	_, err := rebuild.Deadlines(ctx, failingLister{}, &projector{}, nil)
	if !errors.Is(err, errBroken) {
		t.Fatalf("err = %v, want the listing's failure", err)
	}
}

type failingLister struct{ listed }

func (failingLister) StreamIDs(context.Context, string, int, func(string) error) error {
	return errBroken
}
