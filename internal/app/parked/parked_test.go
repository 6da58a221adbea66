package parked_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/eventstore"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var ctx = context.Background()

// onEveryStore runs test against each of the service's event stores the parking
// streams are kept in: in memory, and the Events table on moto.
func onEveryStore(t *testing.T, test func(t *testing.T, store eventstore.Store)) {
	t.Run("memory", func(t *testing.T) { test(t, eventstore.NewMemory()) })
	t.Run("dynamodb", func(t *testing.T) {
		client, table := emulatortest.EventsTable(t)
		test(t, dynamo.New(client, table))
	})
}

// rec is the record of stream at version, as a stream consumer is given it.
func rec(stream string, version int64) eventstore.Record {
	return eventstore.Record{StreamID: stream, Version: version, Event: eventstore.Event{ID: fmt.Sprintf("%s-%d", stream, version), Type: "BikeRequested"}}
}

// parkingStream returns what consumer's parking stream of stream says, one entry
// a record: "parked 3", "redelivered 3".
func parkingStream(t *testing.T, store eventstore.Store, consumer, stream string) []string {
	t.Helper()
	records, err := store.Read(ctx, parked.StreamOf(consumer, stream), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range records {
		c, ok, err := parked.ChangeOf(r.Type, r.Data)
		if err != nil || !ok {
			t.Fatalf("%s version %d: %s %s, %v", r.StreamID, r.Version, r.Type, r.Data, err)
		}
		if c.Consumer != consumer || c.StreamID != stream {
			t.Errorf("%s holds a record of %s's %s: %+v", r.StreamID, c.Consumer, c.StreamID, c)
		}
		what := "parked"
		if c.Redelivered {
			what = "redelivered"
		}
		out = append(out, fmt.Sprintf("%s %d", what, c.Version))
	}
	return out
}

// TestParkKeepsARecordOnce: parking a record appends StreamRecordParked to its
// consumer's parking stream of the record's stream, once however often, and at
// once, the record is parked; another consumer's parking of it goes to that
// consumer's own stream.
func TestParkKeepsARecordOnce(t *testing.T) {
	onEveryStore(t, func(t *testing.T, store eventstore.Store) {
		p := &parked.Parker{Store: store, Consumer: "process", NewID: ident.UUID, Known: eventfilter.Known}
		r := rec("payment-rp_a", 3)
		for range 2 {
			if err := p.Park(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() { errs <- p.Park(ctx, r) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("a park at once with others: %v", err)
			}
		}
		if got := parkingStream(t, store, "process", r.StreamID); !slices.Equal(got, []string{"parked 3"}) {
			t.Errorf("the process's parking stream: %q, want the record parked once", got)
		}
		other := &parked.Parker{Store: store, Consumer: "projector", NewID: ident.UUID, Known: eventfilter.Known}
		if err := other.Park(ctx, r); err != nil {
			t.Fatal(err)
		}
		if got := parkingStream(t, store, "projector", r.StreamID); !slices.Equal(got, []string{"parked 3"}) {
			t.Errorf("the projector's parking stream: %q, want the record parked for it", got)
		}
	})
}

// TestAParkingStreamsRecordIsNeverParked: a record of a parking stream that its
// consumer cannot handle fails, and is delivered again by Lambda: parking it would
// open a row of a record whose own row is the problem. Nothing is appended.
func TestAParkingStreamsRecordIsNeverParked(t *testing.T) {
	onEveryStore(t, func(t *testing.T, store eventstore.Store) {
		p := &parked.Parker{Store: store, Consumer: "projector", NewID: ident.UUID, Known: eventfilter.Known}
		stream := parked.StreamOf("process", "payment-rp_a")
		if !parked.IsParkingStream(stream) || parked.IsParkingStream("payment-rp_a") {
			t.Fatalf("IsParkingStream does not tell %q from a stream of events", stream)
		}
		err := p.Park(ctx, rec(stream, 1))
		if err == nil || !strings.Contains(err.Error(), "parking stream") {
			t.Errorf("parking a parking stream's record: %v, want a refusal", err)
		}
		if got := parkingStream(t, store, "projector", stream); len(got) != 0 {
			t.Errorf("a parking stream's record parked: %q", got)
		}
	})
}

// TestParkRefusesWhatItCannotKey: a record without a stream or a version cannot
// be redelivered, so it is not parked; nothing is appended.
func TestParkRefusesWhatItCannotKey(t *testing.T) {
	onEveryStore(t, func(t *testing.T, store eventstore.Store) {
		p := &parked.Parker{Store: store, Consumer: "process", NewID: ident.UUID, Known: eventfilter.Known}
		for name, r := range map[string]eventstore.Record{
			"no stream":  {Version: 1},
			"no version": {StreamID: "bike-a"},
		} {
			if err := p.Park(ctx, r); err == nil || !strings.Contains(err.Error(), "park") {
				t.Errorf("%s: %v, want a refusal", name, err)
			}
			if got := parkingStream(t, store, "process", r.StreamID); len(got) != 0 {
				t.Errorf("%s: parked %q", name, got)
			}
		}
		unknown := &parked.Parker{Store: store, Consumer: "auditor", NewID: ident.UUID, Known: eventfilter.Known}
		if err := unknown.Park(ctx, eventstore.Record{StreamID: "bike-a", Version: 1}); err == nil || !strings.Contains(err.Error(), "unknown consumer") {
			t.Errorf("a record of an unknown consumer: %v, want a refusal", err)
		}
		if got := parkingStream(t, store, "auditor", "bike-a"); len(got) != 0 {
			t.Errorf("parked for an unknown consumer: %q", got)
		}
	})
}

// redeliveries is a Redeliverer that notes what it is given, in order, and fails
// for the versions in failing.
type redeliveries struct {
	mu      sync.Mutex
	got     []string
	failing map[int64]bool
}

func (r *redeliveries) Redeliver(_ context.Context, consumer, stream string, version int64) (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%s:%s@%d", consumer, stream, version))
	if r.failing[version] {
		return time.Time{}, errors.New("still waits for another stream's state")
	}
	return time.Time{}, nil
}

func (r *redeliveries) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

func known(consumer string) bool { return consumer == "process" || consumer == "projector" }

// row is the redelivery kind's row of consumer's parked record of stream at
// version.
func row(consumer, stream string, version int64) deadlines.Row {
	return deadlines.Row{Kind: "redelivery", Subject: parked.Subject(consumer, stream, version)}
}

// parkAll parks the records of stream at versions for consumer.
func parkAll(t *testing.T, store eventstore.Store, consumer, stream string, versions ...int64) {
	t.Helper()
	p := &parked.Parker{Store: store, Consumer: consumer, NewID: ident.UUID, Known: eventfilter.Known}
	for _, v := range versions {
		if err := p.Park(ctx, rec(stream, v)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRedeliverDeliversTheStreamsParkedRecordsInOrder: a parked record's row
// delivers it again, and first every earlier record of its stream parked for the
// same consumer, in version order, each recorded redelivered as it is; a later
// one waits for its own row, and other consumers' and streams' are left alone.
func TestRedeliverDeliversTheStreamsParkedRecordsInOrder(t *testing.T) {
	onEveryStore(t, func(t *testing.T, store eventstore.Store) {
		const stream = "payment-rp_a"
		parkAll(t, store, "process", stream, 5, 3, 7)
		parkAll(t, store, "projector", stream, 4)
		parkAll(t, store, "process", "payment-rp_b", 2)
		r := &redeliveries{}
		c := parked.Redeliver{Store: store, Redeliverer: r, NewID: ident.UUID, Known: known}
		outcome, err := c.Send(ctx, row("process", stream, 5), "sweep:test")
		if err != nil || outcome != deadlines.Acted {
			t.Fatalf("the row of version 5: %s, %v; want acted", outcome, err)
		}
		if got, want := r.taken(), []string{"process:payment-rp_a@3", "process:payment-rp_a@5"}; !slices.Equal(got, want) {
			t.Errorf("redelivered %q, want %q: the earlier parked record first, the later one left", got, want)
		}
		if got, want := parkingStream(t, store, "process", stream), []string{"parked 5", "parked 3", "parked 7", "redelivered 3", "redelivered 5"}; !slices.Equal(got, want) {
			t.Errorf("the parking stream: %q, want %q", got, want)
		}
		if outcome, err := c.Send(ctx, row("process", stream, 7), "sweep:test"); err != nil || outcome != deadlines.Acted {
			t.Fatalf("the row of version 7: %s, %v", outcome, err)
		}
		if got, want := r.taken(), []string{"process:payment-rp_a@7"}; !slices.Equal(got, want) {
			t.Errorf("redelivered %q, want %q", got, want)
		}
		if got := parkingStream(t, store, "projector", stream); !slices.Equal(got, []string{"parked 4"}) {
			t.Errorf("the projector's parking stream: %q, want its record still parked", got)
		}
		if got := parkingStream(t, store, "process", "payment-rp_b"); !slices.Equal(got, []string{"parked 2"}) {
			t.Errorf("another stream's parking stream: %q, want its record still parked", got)
		}
	})
}

// TestRedeliverStopsAtTheFirstFailure: an earlier parked record that fails again
// stops the redelivery before the row's own record, which is not delivered ahead
// of it, and nothing is recorded redelivered; the row's command fails, so that the
// sweep sends it again after its backoff. Once the earlier one goes through, both
// are delivered, in order.
func TestRedeliverStopsAtTheFirstFailure(t *testing.T) {
	onEveryStore(t, func(t *testing.T, store eventstore.Store) {
		const stream = "bike-a"
		parkAll(t, store, "process", stream, 3, 5)
		r := &redeliveries{failing: map[int64]bool{3: true}}
		c := parked.Redeliver{Store: store, Redeliverer: r, NewID: ident.UUID, Known: known}
		if outcome, err := c.Send(ctx, row("process", stream, 5), "sweep:test"); err == nil {
			t.Fatalf("an earlier record failing again: %s, no error", outcome)
		}
		if got, want := r.taken(), []string{"process:bike-a@3"}; !slices.Equal(got, want) {
			t.Errorf("redelivered %q, want %q: nothing after the one that failed", got, want)
		}
		if got, want := parkingStream(t, store, "process", stream), []string{"parked 3", "parked 5"}; !slices.Equal(got, want) {
			t.Errorf("the parking stream: %q, want %q", got, want)
		}
		r.failing = nil
		if outcome, err := c.Send(ctx, row("process", stream, 5), "sweep:test"); err != nil || outcome != deadlines.Acted {
			t.Fatalf("once the earlier one goes through: %s, %v", outcome, err)
		}
		if got, want := r.taken(), []string{"process:bike-a@3", "process:bike-a@5"}; !slices.Equal(got, want) {
			t.Errorf("redelivered %q, want %q", got, want)
		}
	})
}

// TestARecordRedeliveredMeanwhileIsNothingToDo: a row whose record was delivered
// again meanwhile (by the row of a later record of its stream, or a sweep that
// overlapped), or never parked, finds nothing to do and delivers nothing; a
// subject that names no parked record is an error.
func TestARecordRedeliveredMeanwhileIsNothingToDo(t *testing.T) {
	onEveryStore(t, func(t *testing.T, store eventstore.Store) {
		const stream = "bike-a"
		parkAll(t, store, "process", stream, 3, 5)
		r := &redeliveries{}
		c := parked.Redeliver{Store: store, Redeliverer: r, NewID: ident.UUID, Known: known}
		if outcome, err := c.Send(ctx, row("process", stream, 5), "sweep:test"); err != nil || outcome != deadlines.Acted {
			t.Fatalf("the later record's row: %s, %v", outcome, err)
		}
		r.taken()
		for name, rw := range map[string]deadlines.Row{
			"redelivered by a later row": row("process", stream, 3),
			"redelivered already":        row("process", stream, 5),
			"never parked":               row("projector", stream, 3),
		} {
			if outcome, err := c.Send(ctx, rw, "sweep:test"); err != nil || outcome != deadlines.NothingToDo {
				t.Errorf("%s: %s, %v; want nothing to do", name, outcome, err)
			}
		}
		if got := r.taken(); len(got) != 0 {
			t.Errorf("redelivered %q, want nothing", got)
		}
		if got := parkingStream(t, store, "process", stream); len(got) != 4 {
			t.Errorf("the parking stream: %q, want two parked and two redelivered, once each", got)
		}
		for _, bad := range []string{"auditor#3#bike-a", "process#x#bike-a", "process#3#"} {
			if _, err := c.Send(ctx, deadlines.Row{Kind: "redelivery", Subject: bad}, "sweep:test"); err == nil {
				t.Errorf("subject %q: no error", bad)
			}
		}
	})
}

// racing is a store on which other appends come first: before the first append of
// an event of type typ, it runs first.
type racing struct {
	eventstore.Store
	typ   string
	once  sync.Once
	first func()
}

func (r *racing) Append(ctx context.Context, stream string, expected int64, events ...eventstore.Event) ([]eventstore.Record, error) {
	if len(events) > 0 && events[0].Type == r.typ {
		r.once.Do(r.first)
	}
	return r.Store.Append(ctx, stream, expected, events...)
}

// TestAParkAndARedeliveryAtOnceAreBothRecorded: a record parked between the
// redelivery's read of its parking stream and its append (Lambda's next batch and
// the sweep at once) makes the redelivery's append conflict; it reads the stream
// again and appends, and both are recorded, each once. Parks of one record from
// several batches at once record it once.
func TestAParkAndARedeliveryAtOnceAreBothRecorded(t *testing.T) {
	onEveryStore(t, func(t *testing.T, inner eventstore.Store) {
		const stream = "bike-a"
		parkAll(t, inner, "process", stream, 3)
		p := &parked.Parker{Store: inner, Consumer: "process", NewID: ident.UUID, Known: eventfilter.Known}
		store := &racing{Store: inner, typ: parked.StreamRecordRedelivered{}.EventType(), first: func() {
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					if err := p.Park(ctx, rec(stream, 9)); err != nil {
						t.Errorf("a park during the redelivery: %v", err)
					}
				})
			}
			wg.Wait()
		}}
		c := parked.Redeliver{Store: store, Redeliverer: &redeliveries{}, NewID: ident.UUID, Known: known}
		if outcome, err := c.Send(ctx, row("process", stream, 3), "sweep:test"); err != nil || outcome != deadlines.Acted {
			t.Fatalf("the redelivery: %s, %v", outcome, err)
		}
		if got, want := parkingStream(t, inner, "process", stream), []string{"parked 3", "parked 9", "redelivered 3"}; !slices.Equal(got, want) {
			t.Errorf("the parking stream: %q, want %q", got, want)
		}
	})
}

// TestChangeOfReadsWhatParkAndRedeliverAppend: the records of a parking stream
// decode as the change they are; another type is none of them, and one of theirs
// that names no record is corrupt.
func TestChangeOfReadsWhatParkAndRedeliverAppend(t *testing.T) {
	data, _ := json.Marshal(parked.StreamRecordParked{Consumer: "process", StreamID: "bike-a", Version: 2})
	c, ok, err := parked.ChangeOf(parked.StreamRecordParked{}.EventType(), data)
	if err != nil || !ok || c.Redelivered || c.Record != (parked.Record{Consumer: "process", StreamID: "bike-a", Version: 2}) {
		t.Errorf("StreamRecordParked: %+v, %v, %v", c, ok, err)
	}
	if _, ok, err := parked.ChangeOf("BikeRequested", data); ok || err != nil {
		t.Errorf("another type: %v, %v; want none", ok, err)
	}
	for _, bad := range []string{`{`, `{"consumer":"process","streamId":"bike-a"}`, `{"consumer":"","streamId":"bike-a","version":1}`} {
		if _, _, err := parked.ChangeOf(parked.StreamRecordRedelivered{}.EventType(), []byte(bad)); !errors.Is(err, eventstore.ErrCorruptRecord) {
			t.Errorf("%s: %v, want ErrCorruptRecord", bad, err)
		}
	}
}
