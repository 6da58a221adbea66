package command_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// manualClock is a clock a test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// rentOut registers bikeID, and requests and approves a rental of it for renter,
// returning the rental id and the approval's record as stored.
func rentOut(t *testing.T, h *command.Handler, bikeID, suffix, renterName string) (string, eventstore.Record) {
	t.Helper()
	id := rental.NewRentalID(bikeID, suffix)
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: bikeID}, rental.RequestBike{BikeID: bikeID, Renter: renterName, RentalID: id}} {
		if _, err := h.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := h.Bike(ctx, rental.ApproveRequest{BikeID: bikeID, Renter: renterName, RentalID: id}, command.Meta{})
	if err != nil || len(res.Appended) != 1 {
		t.Fatalf("approve: %+v, %v", res, err)
	}
	recs, err := h.Store().Read(ctx, rental.StreamID(bikeID), res.Appended[0].Version)
	if err != nil || len(recs) != 1 {
		t.Fatalf("read the approval back: %v, %v", recs, err)
	}
	return id, recs[0]
}

// TestFlagOverdueReturn runs an overdue return through the handler, on the memory
// store and on DynamoDB: declined before the rental period ran out, flagged once after
// it (ReturnOverdue, due at the approval's recorded time plus the period, whatever
// the sender's idea of now), declined as already flagged when sent again; the late
// return then records how late the bike came back, and a flag after it is declined
// as returned.
func TestFlagOverdueReturn(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		clock := &manualClock{}
		h := command.New(store, command.WithRentalPeriod(time.Hour), command.WithClock(clock.Now))
		id, approval := rentOut(t, h, "late1", "AAAAAAAAAAAAAAAAAAAAA1", "alice")
		due := approval.RecordedAt.Add(time.Hour)

		clock.Set(due.Add(-time.Second))
		if got, err := h.FlagOverdueReturn(ctx, id, command.Meta{}); err != nil || got != (command.OverdueFlag{Outcome: command.OverdueDeclined, Reason: command.OverdueNotDue}) {
			t.Errorf("a second before it is due: %+v, %v; want declined, not due", got, err)
		}
		// A sender that claims a later time changes nothing: the handler's clock judges.
		res, err := h.Bike(ctx, rental.FlagOverdueReturn{RentalID: id, ApprovedAt: approval.RecordedAt.Add(-24 * time.Hour), Period: time.Second, At: due.Add(time.Hour)}, command.Meta{})
		if !errors.Is(err, rental.ErrReturnNotDue) || len(res.Appended) != 0 {
			t.Errorf("a flag with forged times: %+v, %v; want ErrReturnNotDue", res, err)
		}

		clock.Set(due.Add(5 * time.Minute))
		got, err := h.FlagOverdueReturn(ctx, id, command.Meta{CausationID: "deadline:return"})
		if err != nil || got != (command.OverdueFlag{Outcome: command.OverdueFlagged}) {
			t.Fatalf("five minutes past due: %+v, %v; want flagged", got, err)
		}
		recs, err := store.Read(ctx, rental.StreamID("late1"), approval.Version+1)
		if err != nil || len(recs) != 1 || recs[0].Type != "ReturnOverdue" {
			t.Fatalf("after the flag the stream holds %+v, %v; want one ReturnOverdue", recs, err)
		}
		flagged := recs[0]
		e, err := rental.DecodeEvent(flagged.Type, flagged.Data)
		if err != nil {
			t.Fatal(err)
		}
		o := e.(rental.ReturnOverdue)
		if o.RentalID != id || o.BikeID != "late1" || o.Renter != "alice" || !o.ApprovedAt.Equal(approval.RecordedAt) || !o.DueAt.Equal(due) || !o.FlaggedAt.Equal(due.Add(5*time.Minute)) {
			t.Errorf("ReturnOverdue = %+v, want due at %v", o, due)
		}
		if flagged.CorrelationID != id || flagged.CausationID != "deadline:return" || !slices.Equal(flagged.Tags, []string{"bike:late1", "rental:" + id}) {
			t.Errorf("the flag's record = %+v", flagged)
		}
		bike, _, err := h.LoadBike(ctx, "late1")
		if err != nil || bike.Status != rental.StatusRented || !bike.DueAt.Equal(due) {
			t.Errorf("the bike after the flag: %+v, %v; want rented, due at %v", bike, err, due)
		}

		clock.Set(due.Add(time.Hour))
		if got, err := h.FlagOverdueReturn(ctx, id, command.Meta{}); err != nil || got != (command.OverdueFlag{Outcome: command.OverdueDeclined, Reason: command.OverdueAlreadyFlagged}) {
			t.Errorf("flagged again: %+v, %v; want declined, already flagged", got, err)
		}

		back := due.Add(12*time.Minute + 30*time.Second)
		clock.Set(back)
		ret, err := h.Bike(ctx, rental.ReturnBike{BikeID: "late1", RentalID: id, At: due.Add(-time.Hour)}, command.Meta{})
		if err != nil || len(ret.Appended) != 1 {
			t.Fatalf("the late return: %+v, %v", ret, err)
		}
		var returned rental.BikeReturned
		if err := json.Unmarshal(ret.Appended[0].Data, &returned); err != nil {
			t.Fatal(err)
		}
		if l := returned.Late; !l.DueAt.Equal(due) || !l.ReturnedAt.Equal(back) || l.Seconds != 12*60+30 {
			t.Errorf("the late return recorded %+v, want due %v, back %v (the handler's clock), 750 seconds late", l, due, back)
		}
		if got, err := h.FlagOverdueReturn(ctx, id, command.Meta{}); err != nil || got != (command.OverdueFlag{Outcome: command.OverdueDeclined, Reason: command.OverdueReturned}) {
			t.Errorf("flagged after the return: %+v, %v; want declined, returned", got, err)
		}
		all, _ := store.Read(ctx, rental.StreamID("late1"), 0)
		if n := len(all); n != 5 {
			t.Errorf("the bike's stream holds %d events, want registered, requested, approved, overdue, returned", n)
		}
	})
}

// TestFlagOverdueReturnDeclinesWhatIsNotTheCurrentRental: a rental the bike never
// held, one still awaiting its payment, one on a bike never registered and one whose
// bike was rented again since are declined as not current (or returned), and change
// nothing; a malformed rental id is an error.
func TestFlagOverdueReturnDeclinesWhatIsNotTheCurrentRental(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		clock := &manualClock{now: time.Now().Add(24 * time.Hour)}
		h := command.New(store, command.WithClock(clock.Now))
		current, _ := rentOut(t, h, "cur1", "AAAAAAAAAAAAAAAAAAAAA1", "alice")
		pending := rental.NewRentalID("pend1", "AAAAAAAAAAAAAAAAAAAAA1")
		for _, c := range []rental.Command{rental.RegisterBike{BikeID: "pend1"}, rental.RequestBike{BikeID: "pend1", Renter: "bob", RentalID: pending}} {
			if _, err := h.Bike(ctx, c, command.Meta{}); err != nil {
				t.Fatal(err)
			}
		}
		// An earlier rental of a bike rented again since.
		earlier, _ := rentOut(t, h, "again1", "AAAAAAAAAAAAAAAAAAAAA1", "carol")
		if _, err := h.Bike(ctx, rental.ReturnBike{BikeID: "again1"}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		later := rental.NewRentalID("again1", "AAAAAAAAAAAAAAAAAAAAA2")
		for _, c := range []rental.Command{rental.RequestBike{BikeID: "again1", Renter: "dave", RentalID: later}, rental.ApproveRequest{BikeID: "again1", Renter: "dave", RentalID: later}} {
			if _, err := h.Bike(ctx, c, command.Meta{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			name, rentalID string
			want           command.OverdueReason
		}{
			{"a rental its bike never held", rental.NewRentalID("cur1", "AAAAAAAAAAAAAAAAAAAAA9"), command.OverdueNotCurrent},
			{"a rental awaiting its payment", pending, command.OverdueNotCurrent},
			{"a rental of a bike never registered", rental.NewRentalID("ghost", "AAAAAAAAAAAAAAAAAAAAA1"), command.OverdueNotCurrent},
			{"an earlier rental of a bike rented again", earlier, command.OverdueReturned},
		} {
			before := map[string]int{}
			for _, b := range []string{"cur1", "pend1", "again1", "ghost"} {
				recs, _ := store.Read(ctx, rental.StreamID(b), 0)
				before[b] = len(recs)
			}
			got, err := h.FlagOverdueReturn(ctx, tc.rentalID, command.Meta{})
			if err != nil || got != (command.OverdueFlag{Outcome: command.OverdueDeclined, Reason: tc.want}) {
				t.Errorf("%s: %+v, %v; want declined, %s", tc.name, got, err, tc.want)
			}
			for b, n := range before {
				if recs, _ := store.Read(ctx, rental.StreamID(b), 0); len(recs) != n {
					t.Errorf("%s: bike %s went from %d to %d events", tc.name, b, n, len(recs))
				}
			}
		}
		for _, bad := range []string{"", "cur1", "cur1_short", "cur 1_AAAAAAAAAAAAAAAAAAAAA1", `<script>_AAAAAAAAAAAAAAAAAAAAA1`} {
			if got, err := h.FlagOverdueReturn(ctx, bad, command.Meta{}); !errors.Is(err, rental.ErrInvalidCommand) {
				t.Errorf("rental id %q: %+v, %v; want ErrInvalidCommand", bad, got, err)
			}
		}
		// The default rental period applies: a day after the approval, the current
		// rental is overdue.
		if got, err := h.FlagOverdueReturn(ctx, current, command.Meta{}); err != nil || got.Outcome != command.OverdueFlagged {
			t.Errorf("the current rental a day on: %+v, %v; want flagged", got, err)
		}
	})
}

// TestConcurrentFlagsRecordOne: flags sent at once (a sweep running twice, a
// one-time schedule, an operator) record one ReturnOverdue; the others are declined
// as already flagged.
func TestConcurrentFlagsRecordOne(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		h := command.New(store, command.WithClock(func() time.Time { return time.Now().Add(3 * time.Hour) }))
		id, _ := rentOut(t, h, "race1", "AAAAAAAAAAAAAAAAAAAAA1", "alice")
		var wg sync.WaitGroup
		outcomes := make([]command.OverdueFlag, 6)
		errs := make([]error, len(outcomes))
		for i := range outcomes {
			wg.Go(func() { outcomes[i], errs[i] = h.FlagOverdueReturn(ctx, id, command.Meta{}) })
		}
		wg.Wait()
		flagged := 0
		for i, o := range outcomes {
			switch {
			case errs[i] != nil:
				t.Errorf("flag %d: %v", i, errs[i])
			case o.Outcome == command.OverdueFlagged:
				flagged++
			case o.Reason != command.OverdueAlreadyFlagged:
				t.Errorf("flag %d: %+v, want flagged or already flagged", i, o)
			}
		}
		recs, _ := store.Read(ctx, rental.StreamID("race1"), 0)
		overdue := 0
		for _, r := range recs {
			if r.Type == "ReturnOverdue" {
				overdue++
			}
		}
		if flagged != 1 || overdue != 1 {
			t.Errorf("%d flags answered flagged, %d ReturnOverdue recorded; want 1 and 1", flagged, overdue)
		}
	})
}
