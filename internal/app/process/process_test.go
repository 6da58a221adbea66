package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

var ctx = context.Background()

var price = process.Price{Amount: 1500, Currency: "EUR"}

// feed is an event store that also keeps every appended record in order, as the
// Events table's stream does, so that tests can deliver them to the process.
type feed struct {
	eventstore.Store
	mu  sync.Mutex
	log []eventstore.Record
}

func (f *feed) Append(ctx context.Context, stream string, v int64, events ...eventstore.Event) ([]eventstore.Record, error) {
	recs, err := f.Store.Append(ctx, stream, v, events...)
	if err == nil {
		f.mu.Lock()
		f.log = append(f.log, recs...)
		f.mu.Unlock()
	}
	return recs, err
}

// AppendStreams and ReadBackward pass through to the memory store; appends are fed
// like Append's.
func (f *feed) AppendStreams(ctx context.Context, appends ...eventstore.StreamAppend) ([]eventstore.Record, error) {
	recs, err := f.Store.(eventstore.MultiStreamStore).AppendStreams(ctx, appends...)
	if err == nil {
		f.mu.Lock()
		f.log = append(f.log, recs...)
		f.mu.Unlock()
	}
	return recs, err
}

func (f *feed) ReadBackward(ctx context.Context, stream string, before int64, limit int) ([]eventstore.Record, error) {
	return f.Store.(eventstore.BackwardReader).ReadBackward(ctx, stream, before, limit)
}

func (f *feed) since(n int) []eventstore.Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log[n:])
}

// world is one test's service: a store with its stream, the command handler, and the
// process under test.
type world struct {
	t        *testing.T
	store    *feed
	commands *command.Handler
	process  *process.Process
	cursor   int // how much of the feed has been delivered
}

func newWorld(t *testing.T, mode process.RecordingMode, wrap func(process.Commands) process.Commands) *world {
	t.Helper()
	w := &world{t: t, store: &feed{Store: eventstore.NewMemory()}}
	w.commands = command.New(w.store, command.WithProvider(generic.Provider{}))
	var cmds process.Commands = w.commands
	if wrap != nil {
		cmds = wrap(cmds)
	}
	p, err := process.New(process.Config{Store: w.store, Commands: cmds, Mode: mode, Price: price})
	if err != nil {
		t.Fatal(err)
	}
	w.process = p
	return w
}

// modes runs a test once per recording mechanism: the same tests must pass for both.
func modes(t *testing.T, fn func(t *testing.T, mode process.RecordingMode)) {
	for _, m := range []process.RecordingMode{process.RecordByAppend, process.RecordByCommand} {
		t.Run(string(m), func(t *testing.T) { fn(t, m) })
	}
}

// deliver hands every record not yet delivered to the process, in order, until the
// stream is quiet, and fails the test on a handler error.
func (w *world) deliver() {
	w.t.Helper()
	for range 20 {
		batch := w.store.since(w.cursor)
		if len(batch) == 0 {
			return
		}
		for _, r := range batch {
			if err := w.process.Handle(ctx, r); err != nil {
				w.t.Fatalf("handle %s %s v%d: %v", r.Type, r.StreamID, r.Version, err)
			}
			w.cursor++
		}
	}
	w.t.Fatal("the stream never went quiet")
}

func (w *world) bike(c rental.Command) {
	w.t.Helper()
	if _, err := w.commands.Bike(ctx, c, command.Meta{}); err != nil {
		w.t.Fatalf("%T: %v", c, err)
	}
}

func (w *world) pay(c payment.Command) {
	w.t.Helper()
	if _, err := w.commands.Payment(ctx, c, command.Meta{}); err != nil {
		w.t.Fatalf("%T: %v", c, err)
	}
}

func (w *world) stream(id string) []eventstore.Record {
	w.t.Helper()
	recs, err := w.store.Read(ctx, id, 0)
	if err != nil {
		w.t.Fatal(err)
	}
	return recs
}

func types(recs []eventstore.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type
	}
	return out
}

// requested registers bike b1 and requests it for alice; it returns the rental id.
func (w *world) requested() string {
	w.t.Helper()
	rentalID := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA")
	w.bike(rental.RegisterBike{BikeID: "b1"})
	w.bike(rental.RequestBike{BikeID: "b1", Renter: "alice", RentalID: rentalID})
	return rentalID
}

// expect asserts the types held by the rental's payment, process and bike streams.
func (w *world) expect(rentalID string, paymentTypes, processTypes, bikeTypes []string) {
	w.t.Helper()
	check := func(stream string, want []string) {
		if got := types(w.stream(stream)); !slices.Equal(got, want) {
			w.t.Errorf("%s holds %v, want %v", stream, got, want)
		}
	}
	check(payment.StreamID(payment.ReferenceFor(rentalID)), paymentTypes)
	check(rentalpayment.StreamID(rentalID), processTypes)
	check(rental.StreamID("b1"), bikeTypes)
}

var (
	started    = []string{"RentalPaymentRequested"}
	ended      = []string{"RentalPaymentRequested", "RentalPaymentProcessCompleted"}
	prepared   = []string{"PaymentPrepared"}
	bikeAsked  = []string{"BikeRegistered", "BikeRequested"}
	bikeRented = []string{"BikeRegistered", "BikeRequested", "RequestApproved"}
	bikeFreed  = []string{"BikeRegistered", "BikeRequested", "RequestRejected"}
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The reference design, first half: given a bike was requested, the process asks for
// the payment; when asked to give up, the command succeeds and the rental side is told
// RejectRequest.
func TestGivenBikeRequestedWhenAskedToGiveUpThenRequestRejected(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		rentalID := w.requested()
		w.deliver()
		ref := payment.ReferenceFor(rentalID)
		waitFor(t, "PreparePayment", func() bool { return slices.Equal(types(w.stream(payment.StreamID(ref))), prepared) })
		p := payment.Fold(decodePayments(t, w.stream(payment.StreamID(ref))))
		if p.Amount != price.Amount || p.Currency != price.Currency || p.Reference != ref {
			t.Errorf("payment prepared as %+v, want %d %s for %s", p, price.Amount, price.Currency, ref)
		}

		outcome, err := w.process.CancelRentalPayment(ctx, rentalID, command.Meta{CausationID: "test"})
		if err != nil || outcome != process.OutcomeCancelled {
			t.Fatalf("CancelRentalPayment = %q, %v; want cancelled", outcome, err)
		}
		w.deliver()
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentCancelled"}, ended, bikeFreed)
		bike, _, _ := w.commands.LoadBike(ctx, "b1")
		if bike.Status != rental.StatusAvailable {
			t.Errorf("bike is %s after giving up, want available", bike.Status)
		}
		assertCompletion(t, w, rentalID, rentalpayment.CompletedCancelled)
	})
}

// The reference design, second half: given the payment is confirmed, the rental side
// is told ApproveRequest and the process records its end.
func TestGivenPaymentConfirmedThenRequestApprovedAndProcessEnds(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		rentalID := w.requested()
		w.deliver()
		w.pay(payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)})
		w.deliver()
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentConfirmed"}, ended, bikeRented)
		assertCompletion(t, w, rentalID, rentalpayment.CompletedApproved)
	})
}

func TestRejectedPaymentReleasesTheBike(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		rentalID := w.requested()
		w.deliver()
		w.pay(payment.RejectPayment{Reference: payment.ReferenceFor(rentalID), Reason: "card declined"})
		w.deliver()
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentRejected"}, ended, bikeFreed)
		assertCompletion(t, w, rentalID, rentalpayment.CompletedRejected)
	})
}

func assertCompletion(t *testing.T, w *world, rentalID string, want rentalpayment.Completion) {
	t.Helper()
	recs := w.stream(rentalpayment.StreamID(rentalID))
	s := rentalpayment.State{Status: rentalpayment.StatusNotStarted}
	for _, r := range recs {
		e, err := rentalpayment.DecodeEvent(r.Type, r.Data)
		if err != nil {
			t.Fatal(err)
		}
		s = rentalpayment.Evolve(s, e)
		if r.CorrelationID != rentalID || r.CausationID == "" || !slices.Contains(r.Tags, "rental:"+rentalID) {
			t.Errorf("process event %s lacks correlation, causation or tag: %+v", r.Type, r)
		}
	}
	if s.Status != rentalpayment.StatusCompleted || s.Outcome != want {
		t.Errorf("process state %+v, want completed with %s", s, want)
	}
	// Causation: the completion points at the payment event that ended the process.
	last := recs[len(recs)-1]
	payments := w.stream(payment.StreamID(payment.ReferenceFor(rentalID)))
	if cause := payments[len(payments)-1]; last.CausationID != cause.ID {
		t.Errorf("completion caused by %q, want the %s event %q", last.CausationID, cause.Type, cause.ID)
	}
}

func decodePayments(t *testing.T, recs []eventstore.Record) []payment.Event {
	var out []payment.Event
	for _, r := range recs {
		e, err := payment.DecodeEvent(r.Type, r.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// counting records the commands the process sends.
type counting struct {
	process.Commands
	mu   sync.Mutex
	sent []string
}

func (c *counting) Payment(ctx context.Context, cmd payment.Command, meta command.Meta) (command.Result[payment.Payment], error) {
	c.mu.Lock()
	c.sent = append(c.sent, fmt.Sprintf("%T", cmd))
	c.mu.Unlock()
	return c.Commands.Payment(ctx, cmd, meta)
}

func (c *counting) Bike(ctx context.Context, cmd rental.Command, meta command.Meta) (command.Result[rental.Bike], error) {
	c.mu.Lock()
	c.sent = append(c.sent, fmt.Sprintf("%T", cmd))
	c.mu.Unlock()
	return c.Commands.Bike(ctx, cmd, meta)
}

func TestRedeliveryConverges(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		counter := &counting{}
		w := newWorld(t, mode, func(inner process.Commands) process.Commands { counter.Commands = inner; return counter })
		rentalID := w.requested()
		w.deliver()
		w.pay(payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)})
		w.deliver()
		all := w.store.since(0)
		// The whole batch again, then every suffix of it: at-least-once delivery.
		for from := range all {
			for _, r := range all[from:] {
				if err := w.process.Handle(ctx, r); err != nil {
					t.Fatalf("redelivery from %d: %s: %v", from, r.Type, err)
				}
			}
		}
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentConfirmed"}, ended, bikeRented)
		if got := len(w.store.since(0)); got != len(all) {
			t.Errorf("redelivery appended %d more events", got-len(all))
		}
		// Once the process has started, BikeRequested sends nothing; once it has
		// ended, nothing does.
		if want := []string{"payment.PreparePayment", "rental.ApproveRequest"}; !slices.Equal(counter.sent, want) {
			t.Errorf("commands sent = %v, want %v", counter.sent, want)
		}
	})
}

// crashing lets a command succeed, then reports failure once, as if the function
// died right after the command took effect.
type crashing struct {
	process.Commands
	after   string
	crashed bool
}

func (c *crashing) Payment(ctx context.Context, cmd payment.Command, meta command.Meta) (command.Result[payment.Payment], error) {
	res, err := c.Commands.Payment(ctx, cmd, meta)
	if err == nil && !c.crashed && fmt.Sprintf("%T", cmd) == c.after {
		c.crashed = true
		return res, errors.New("function crashed")
	}
	return res, err
}

func (c *crashing) Bike(ctx context.Context, cmd rental.Command, meta command.Meta) (command.Result[rental.Bike], error) {
	res, err := c.Commands.Bike(ctx, cmd, meta)
	if err == nil && !c.crashed && fmt.Sprintf("%T", cmd) == c.after {
		c.crashed = true
		return res, errors.New("function crashed")
	}
	return res, err
}

func TestCrashBetweenWorkAndRecordConverges(t *testing.T) {
	for _, after := range []string{"payment.PreparePayment", "rental.ApproveRequest"} {
		t.Run(after, func(t *testing.T) {
			modes(t, func(t *testing.T, mode process.RecordingMode) {
				c := &crashing{after: after}
				w := newWorld(t, mode, func(inner process.Commands) process.Commands { c.Commands = inner; return c })
				rentalID := w.requested()
				w.pay(payment.PreparePayment{Reference: "rp_other", PaymentID: "x", Amount: 1, Currency: "EUR"}) // noise
				deliverAll := func() (failures int) {
					for _, r := range w.store.since(0) {
						if err := w.process.Handle(ctx, r); err != nil {
							failures++
						}
					}
					return failures
				}
				if after == "rental.ApproveRequest" {
					deliverAll()
					w.pay(payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)})
				}
				if deliverAll() != 1 || !c.crashed {
					t.Fatalf("the crash did not happen once (crashed %v)", c.crashed)
				}
				for range 3 {
					if n := deliverAll(); n != 0 {
						t.Fatalf("redelivery failed %d times", n)
					}
				}
				if after == "payment.PreparePayment" {
					w.expect(rentalID, prepared, started, bikeAsked)
				} else {
					w.expect(rentalID, []string{"PaymentPrepared", "PaymentConfirmed"}, ended, bikeRented)
				}
			})
		})
	}
}

func TestRacingDeliveriesStartOneProcess(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		rentalID := w.requested()
		requested := w.store.since(0)[1]
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		start := make(chan struct{})
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- w.process.Handle(ctx, requested)
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("racing delivery: %v", err)
			}
		}
		w.expect(rentalID, prepared, started, bikeAsked)
	})
}

func TestCancelFindsNothingToDo(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		cancel := func(rentalID string) process.Outcome {
			t.Helper()
			out, err := w.process.CancelRentalPayment(ctx, rentalID, command.Meta{})
			if err != nil {
				t.Fatalf("cancel %s: %v", rentalID, err)
			}
			return out
		}
		if out := cancel(rental.NewRentalID("b9", "AAAAAAAAAAAAAAAAAAAAAA")); out != process.OutcomeNothingToDo {
			t.Errorf("unknown rental: %s", out)
		}
		rentalID := w.requested()
		w.deliver()
		if out := cancel(rentalID); out != process.OutcomeCancelled {
			t.Errorf("first cancel: %s", out)
		}
		if out := cancel(rentalID); out != process.OutcomeNothingToDo {
			t.Errorf("second cancel in a row: %s", out)
		}
		w.deliver()
		if out := cancel(rentalID); out != process.OutcomeNothingToDo {
			t.Errorf("cancel of a completed rental: %s", out)
		}
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentCancelled"}, ended, bikeFreed)
	})
}

func TestCancelAfterConfirmationIsDeclined(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		rentalID := w.requested()
		w.deliver()
		w.pay(payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)})
		// Confirmed, but the process has not reacted yet.
		out, err := w.process.CancelRentalPayment(ctx, rentalID, command.Meta{})
		if err != nil || out != process.OutcomeDeclined {
			t.Fatalf("cancel after confirmation = %q, %v; want declined", out, err)
		}
		w.deliver()
		out, err = w.process.CancelRentalPayment(ctx, rentalID, command.Meta{})
		if err != nil || out != process.OutcomeNothingToDo {
			t.Fatalf("cancel after completion = %q, %v; want nothing-to-do", out, err)
		}
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentConfirmed"}, ended, bikeRented)
		if bike, _, _ := w.commands.LoadBike(ctx, "b1"); bike.Status != rental.StatusRented {
			t.Errorf("bike is %s, want rented", bike.Status)
		}
	})
}

// A payment can settle before the process has recorded its start (the two events
// live in different streams): the record must fail, to be retried, not be dropped.
func TestSettlementBeforeTheProcessStartedIsRetried(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		rentalID := w.requested()
		ref := payment.ReferenceFor(rentalID)
		// The payment side prepared and confirmed before the process recorded anything.
		w.pay(payment.PreparePayment{Reference: ref, PaymentID: "p", Amount: 1500, Currency: "EUR"})
		w.pay(payment.ConfirmPayment{Reference: ref})
		all := w.store.since(0)
		confirmed := all[slices.IndexFunc(all, func(r eventstore.Record) bool { return r.Type == "PaymentConfirmed" })]
		if err := w.process.Handle(ctx, confirmed); !errors.Is(err, rentalpayment.ErrProcessNotStarted) {
			t.Fatalf("err = %v, want ErrProcessNotStarted", err)
		}
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentConfirmed"}, nil, bikeAsked)
		w.deliver() // BikeRequested starts the process; the retried confirmation ends it
		if err := w.process.Handle(ctx, confirmed); err != nil {
			t.Fatal(err)
		}
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentConfirmed"}, ended, bikeRented)
	})
}

func TestOtherEventsAreIgnoredAndCorruptOnesReported(t *testing.T) {
	w := newWorld(t, process.RecordByAppend, nil)
	for _, r := range []eventstore.Record{
		{StreamID: "bike-b1", Version: 1, Event: eventstore.Event{ID: "1", Type: "BikeRegistered", Data: []byte(`{"bikeId":"b1"}`)}},
		{StreamID: "payment-rp_x", Version: 1, Event: eventstore.Event{ID: "2", Type: "PaymentPrepared", Data: []byte(`{}`)}},
		{StreamID: "other", Version: 1, Event: eventstore.Event{ID: "3", Type: "SomethingElse", Data: []byte(`{}`)}},
	} {
		if err := w.process.Handle(ctx, r); err != nil {
			t.Errorf("%s: %v", r.Type, err)
		}
	}
	if len(w.store.since(0)) != 0 {
		t.Errorf("ignored events caused writes")
	}
	bad := eventstore.Record{StreamID: "bike-b1", Version: 2, Event: eventstore.Event{ID: "4", Type: "BikeRequested", Data: []byte(`{"rentalId":`)}}
	if err := w.process.Handle(ctx, bad); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Errorf("corrupt record: err = %v, want ErrCorruptRecord", err)
	}
}

func TestRentalHistoryShowsTheProcess(t *testing.T) {
	w := newWorld(t, process.RecordByAppend, nil)
	rentalID := w.requested()
	w.deliver()
	w.pay(payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)})
	w.deliver()
	view, err := rentalview.Load(ctx, w.store, rentalID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range view.History {
		got = append(got, e.Type)
	}
	want := []string{"BikeRequested", "PaymentPrepared", "RentalPaymentRequested", "PaymentConfirmed", "RequestApproved", "RentalPaymentProcessCompleted"}
	if !slices.Equal(got, want) || view.Status != rentalview.StatusApproved {
		t.Errorf("history %v status %s, want %v approved", got, view.Status, want)
	}
}

func TestConfiguration(t *testing.T) {
	if _, err := process.ParseRecordingMode("queue"); err == nil {
		t.Error("an unknown recording mode was accepted")
	}
	if m, err := process.ParseRecordingMode(""); err != nil || m != process.RecordByAppend {
		t.Errorf("default mode = %q, %v", m, err)
	}
	if _, err := process.New(process.Config{Store: eventstore.NewMemory(), Price: process.Price{Amount: 0, Currency: "EUR"}}); err == nil {
		t.Error("a zero price was accepted")
	}
}

// refusing fails one kind of command without running it.
type refusing struct {
	process.Commands
	kind string
}

func (r refusing) Payment(ctx context.Context, cmd payment.Command, meta command.Meta) (command.Result[payment.Payment], error) {
	if fmt.Sprintf("%T", cmd) == r.kind {
		return command.Result[payment.Payment]{}, errors.New("payment side unavailable")
	}
	return r.Commands.Payment(ctx, cmd, meta)
}

func (r refusing) Bike(ctx context.Context, cmd rental.Command, meta command.Meta) (command.Result[rental.Bike], error) {
	if fmt.Sprintf("%T", cmd) == r.kind {
		return command.Result[rental.Bike]{}, errors.New("rental side unavailable")
	}
	return r.Commands.Bike(ctx, cmd, meta)
}

// Recording always follows the work it asserts: when the work fails, nothing is
// recorded, and the record fails so that it is delivered again.
func TestNothingIsRecordedWhenTheWorkFails(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, func(inner process.Commands) process.Commands {
			return refusing{Commands: inner, kind: "payment.PreparePayment"}
		})
		rentalID := w.requested()
		if err := w.process.Handle(ctx, w.store.since(0)[1]); err == nil {
			t.Fatal("a failed PreparePayment was not reported")
		}
		w.expect(rentalID, nil, nil, bikeAsked)

		w = newWorld(t, mode, func(inner process.Commands) process.Commands {
			return refusing{Commands: inner, kind: "rental.ApproveRequest"}
		})
		rentalID = w.requested()
		w.deliver()
		w.pay(payment.ConfirmPayment{Reference: payment.ReferenceFor(rentalID)})
		confirmed := w.store.since(0)
		if err := w.process.Handle(ctx, confirmed[len(confirmed)-1]); err == nil {
			t.Fatal("a failed ApproveRequest was not reported")
		}
		w.expect(rentalID, []string{"PaymentPrepared", "PaymentConfirmed"}, started, bikeAsked)
	})
}

// TestTheProcessActsOnExactlyTheTypesItIsWokenFor ties the stream filter to the
// code: a record of a type the process is not woken for would be ignored anyway
// (so filtering it drops nothing), and one of every type it is woken for is read
// (a corrupt one is refused rather than ignored).
func TestTheProcessActsOnExactlyTheTypesItIsWokenFor(t *testing.T) {
	w := newWorld(t, process.RecordByAppend, nil)
	rentalID := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA")
	for _, typ := range eventfilter.EventTypes() {
		r := eventstore.Record{StreamID: "s", Version: 1, Event: eventstore.Event{ID: "e-" + typ, Type: typ, Data: []byte(`not json`), CorrelationID: rentalID}}
		err := w.process.Handle(ctx, r)
		if eventfilter.Wakes(eventfilter.Process, typ) {
			if !errors.Is(err, eventstore.ErrCorruptRecord) {
				t.Errorf("%s: the process is woken for it but did not read it (%v)", typ, err)
			}
		} else if err != nil {
			t.Errorf("%s: the process is not woken for it but acted on it: %v", typ, err)
		}
	}
	if n := len(w.store.since(0)); n != 0 {
		t.Errorf("records the process ignores wrote %d events", n)
	}
}

// TestTheProcessRecordsWhereItsRentalIsOnTheBike: the process's start records the
// version of the BikeRequested it started from, in both recording modes, so that a
// command or view about the rental later finds its records on the bike by key
// (bikestream), however many rentals the bike has had since.
func TestTheProcessRecordsWhereItsRentalIsOnTheBike(t *testing.T) {
	modes(t, func(t *testing.T, mode process.RecordingMode) {
		w := newWorld(t, mode, nil)
		rentalID := w.requested()
		w.deliver()
		var requestedAt int64
		for _, r := range w.stream(rental.StreamID("b1")) {
			if r.Type == "BikeRequested" {
				requestedAt = r.Version
			}
		}
		process := w.stream(rentalpayment.StreamID(rentalID))
		if len(process) == 0 || process[0].Type != rentalpayment.TypeRequested {
			t.Fatalf("the process's stream: %v", types(process))
		}
		var start rentalpayment.RentalPaymentRequested
		if err := json.Unmarshal(process[0].Data, &start); err != nil {
			t.Fatal(err)
		}
		if requestedAt == 0 || start.BikeVersion != requestedAt {
			t.Errorf("the start records bike version %d, want the BikeRequested's %d", start.BikeVersion, requestedAt)
		}
	})
}
