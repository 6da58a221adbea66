package orders_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/examples/orders"
	"github.com/bikerental/bikerental/examples/orders/internal/moto"
)

func newStore(t *testing.T) *orders.Store {
	t.Helper()
	db := dynamodb.NewFromConfig(moto.Config(t))
	name := moto.TableName("orders")
	if _, err := db.CreateTable(context.Background(), orders.Definition(name)); err != nil {
		t.Fatal(err)
	}
	s, err := orders.NewStore(db, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// step is one command and what it must answer.
type step struct {
	name    string
	do      func(context.Context) (deadlines.Outcome, error)
	outcome deadlines.Outcome
	err     error
}

func run(t *testing.T, s *orders.Store, id string, steps []step, wantTypes ...string) {
	t.Helper()
	for _, st := range steps {
		out, err := st.do(context.Background())
		if out != st.outcome || !errors.Is(err, st.err) {
			t.Errorf("%s: %q, %v; want %q, %v", st.name, out, err, st.outcome, st.err)
		}
	}
	evs, err := s.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, e := range evs {
		if e.Seq != int64(i+1) || e.ID != id {
			t.Errorf("event %d: %s at %d", i, e.ID, e.Seq)
		}
		types = append(types, e.Type)
	}
	if strings.Join(types, " ") != strings.Join(wantTypes, " ") {
		t.Errorf("%s holds %v, want %v", id, types, wantTypes)
	}
}

func TestTheOrdersCommands(t *testing.T) {
	s := newStore(t)
	ctx := "sweep:2026-03-02T09:16:00Z"
	place := func(id string) step {
		return step{"place " + id, func(c context.Context) (deadlines.Outcome, error) { return s.Place(c, id) }, deadlines.Acted, nil}
	}
	again := func(st step, outcome deadlines.Outcome, err error) step {
		st.name, st.outcome, st.err = st.name+" again", outcome, err
		return st
	}
	confirm := func(id string) step {
		return step{"confirm " + id, func(c context.Context) (deadlines.Outcome, error) { return s.Confirm(c, id) }, deadlines.Acted, nil}
	}
	cancel := func(id string) step {
		return step{"cancel " + id, func(c context.Context) (deadlines.Outcome, error) { return s.Cancel(c, id, ctx) }, deadlines.Acted, nil}
	}
	t.Run("cancelled", func(t *testing.T) {
		run(t, s, "o-1", []step{place("o-1"), again(place("o-1"), deadlines.NothingToDo, nil), cancel("o-1"),
			again(cancel("o-1"), deadlines.NothingToDo, nil), again(confirm("o-1"), "", orders.ErrCancelled)},
			orders.OrderPlaced, orders.OrderCancelled)
	})
	t.Run("confirmed, then a cancel declined", func(t *testing.T) {
		run(t, s, "o-2", []step{place("o-2"), confirm("o-2"), again(confirm("o-2"), deadlines.NothingToDo, nil), again(cancel("o-2"), deadlines.Declined, nil)},
			orders.OrderPlaced, orders.OrderConfirmed)
	})
	t.Run("unknown", func(t *testing.T) {
		run(t, s, "o-3", []step{again(cancel("o-3"), "", orders.ErrNotFound), again(confirm("o-3"), "", orders.ErrNotFound)})
	})
	t.Run("bad ids", func(t *testing.T) {
		long := strings.Repeat("x", orders.MaxID+1)
		run(t, s, "o-4", []step{again(place(""), "", orders.ErrBadID), again(cancel(long), "", orders.ErrBadID), again(confirm(long), "", orders.ErrBadID)})
		if _, err := s.Read(context.Background(), ""); !errors.Is(err, orders.ErrBadID) {
			t.Errorf("read of no id: %v", err)
		}
	})
}

func TestTheInvoicesCommands(t *testing.T) {
	s := newStore(t)
	issue := func(id string) step {
		return step{"issue " + id, func(c context.Context) (deadlines.Outcome, error) { return s.Issue(c, id, "o-1") }, deadlines.Acted, nil}
	}
	pay := func(id string) step {
		return step{"pay " + id, func(c context.Context) (deadlines.Outcome, error) { return s.Pay(c, id) }, deadlines.Acted, nil}
	}
	remind := func(id string) step {
		return step{"remind " + id, func(c context.Context) (deadlines.Outcome, error) { return s.Remind(c, id, "sweep") }, deadlines.Acted, nil}
	}
	with := func(st step, outcome deadlines.Outcome, err error) step {
		st.name, st.outcome, st.err = st.name+" again", outcome, err
		return st
	}
	t.Run("reminded once, then paid", func(t *testing.T) {
		run(t, s, "i-1", []step{issue("i-1"), with(issue("i-1"), deadlines.NothingToDo, nil), remind("i-1"),
			with(remind("i-1"), deadlines.NothingToDo, nil), pay("i-1"), with(pay("i-1"), deadlines.NothingToDo, nil)},
			orders.InvoiceIssued, orders.ReminderSent, orders.InvoicePaid)
	})
	t.Run("paid, then a reminder declined", func(t *testing.T) {
		run(t, s, "i-2", []step{issue("i-2"), pay("i-2"), with(remind("i-2"), deadlines.Declined, nil)},
			orders.InvoiceIssued, orders.InvoicePaid)
	})
	t.Run("an order's id is not an invoice's", func(t *testing.T) {
		if _, err := s.Place(context.Background(), "x-1"); err != nil {
			t.Fatal(err)
		}
		run(t, s, "x-1", []step{with(issue("x-1"), "", orders.ErrIDTaken), with(remind("x-1"), "", orders.ErrNotFound)}, orders.OrderPlaced)
	})
}

// TestConcurrentCancelsAppendOne: cancels delivered at once (two sweeps
// overlapping) append one OrderCancelled; the others find nothing to do.
func TestConcurrentCancelsAppendOne(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Place(ctx, "o-1"); err != nil {
		t.Fatal(err)
	}
	const n = 4
	outcomes := make([]deadlines.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { outcomes[i], errs[i] = s.Cancel(ctx, "o-1", "sweep") })
	}
	wg.Wait()
	acted := 0
	for i := range n {
		if errs[i] != nil {
			t.Errorf("cancel %d: %v", i, errs[i])
		}
		if outcomes[i] == deadlines.Acted {
			acted++
		}
	}
	evs, err := s.Read(ctx, "o-1")
	if err != nil {
		t.Fatal(err)
	}
	if acted != 1 || len(evs) != 2 || evs[1].Type != orders.OrderCancelled {
		t.Errorf("%d cancels acted, the stream holds %v; want one OrderCancelled", acted, evs)
	}
}

func TestNewStoreRefusesAMissingTable(t *testing.T) {
	if _, err := orders.NewStore(dynamodb.New(dynamodb.Options{}), ""); err == nil {
		t.Error("no error")
	}
}
