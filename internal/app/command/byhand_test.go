package command_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// owedRental makes a rental of bike whose payment was cancelled, then taken by a
// provider that cannot refund: a refund of 1500 EUR is owed.
func owedRental(t *testing.T, h *command.Handler, bike string) string {
	t.Helper()
	id := rental.NewRentalID(bike, "AAAAAAAAAAAAAAAAAAAAAA")
	ref := payment.ReferenceFor(id)
	for _, c := range []rental.Command{rental.RegisterBike{BikeID: bike}, rental.RequestBike{BikeID: bike, Renter: "alice", RentalID: id}} {
		if _, err := h.Bike(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []payment.Command{
		payment.PreparePayment{Reference: ref, PaymentID: "p1", Amount: 1500, Currency: "EUR"},
		payment.CancelPayment{Reference: ref},
		payment.ConfirmPayment{Reference: ref, ProviderEventID: "evt_late"},
		payment.OweRefund{Reference: ref},
	} {
		if _, err := h.Payment(ctx, c, command.Meta{}); err != nil {
			t.Fatalf("%T: %v", c, err)
		}
	}
	return id
}

// TestARefundOwedIsRecordedMadeByHandOnce: on memory and on DynamoDB, a refund
// owed is recorded made by hand once, with what the operator gave and who; every
// refusal (another amount, a second one, a rental that owes none, one that does not
// exist) appends nothing.
func TestARefundOwedIsRecordedMadeByHandOnce(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		h := command.New(store, command.WithProvider(generic.Provider{}))
		id := owedRental(t, h, "b1")
		stream := payment.StreamID(payment.ReferenceFor(id))
		length := func() int {
			recs, err := store.Read(ctx, stream, 0)
			if err != nil {
				t.Fatal(err)
			}
			return len(recs)
		}
		before := length()
		meta := command.Meta{CausationID: "request:r1"}

		if _, err := h.RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{Amount: 1000, OperatorReference: "bank-1", RecordedBy: "op-1"}, meta); !errors.Is(err, payment.ErrRefundAmountNotOwed) {
			t.Fatalf("another amount: %v", err)
		}
		if n := length(); n != before {
			t.Fatalf("a refused amount appended %d events", n-before)
		}
		res, err := h.RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "<b>bank-1</b>", RecordedBy: "op-1"}, meta)
		if err != nil {
			t.Fatal(err)
		}
		if res.Payment.Refund != payment.RefundStatusMadeByHand || res.Refund != payment.RefundStatusMadeByHand {
			t.Fatalf("result = %+v", res)
		}
		r := res.Recorded
		var e payment.RefundMadeByHand
		if err := json.Unmarshal(r.Data, &e); err != nil || r.Type != "RefundMadeByHand" || r.CausationID != "request:r1" || r.CorrelationID != id ||
			e != (payment.RefundMadeByHand{Reference: payment.ReferenceFor(id), PaymentID: res.Payment.PaymentID, Amount: 1500, Currency: "EUR", OperatorReference: "<b>bank-1</b>", RecordedBy: "op-1"}) {
			t.Fatalf("recorded %+v: %s (%v)", r, r.Data, err)
		}
		for name, again := range map[string]func() error{
			"the same again": func() error {
				_, err := h.RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "<b>bank-1</b>", RecordedBy: "op-1"}, meta)
				return err
			},
			"another reference": func() error {
				_, err := h.RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-2", RecordedBy: "op-2"}, meta)
				return err
			},
			"another amount, after": func() error {
				_, err := h.RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{Amount: 1, OperatorReference: "bank-2", RecordedBy: "op-1"}, meta)
				return err
			},
		} {
			if err := again(); !errors.Is(err, payment.ErrRefundAlreadyRecorded) {
				t.Errorf("%s: %v, want ErrRefundAlreadyRecorded", name, err)
			}
		}
		if n := length(); n != before+1 {
			t.Fatalf("the stream holds %d events after one refund made by hand, want %d", n, before+1)
		}

		// A rental whose payment was never prepared owes nothing; one that does not
		// exist, or cannot, reads as not found.
		requested := rental.NewRentalID("b2", "BBBBBBBBBBBBBBBBBBBBBB")
		for _, c := range []rental.Command{rental.RegisterBike{BikeID: "b2"}, rental.RequestBike{BikeID: "b2", Renter: "bob", RentalID: requested}} {
			if _, err := h.Bike(ctx, c, command.Meta{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := h.RefundMadeByHand(ctx, requested, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-1", RecordedBy: "op-1"}, meta); !errors.Is(err, payment.ErrNoRefundOwed) {
			t.Errorf("a rental with no payment: %v", err)
		}
		for _, unknown := range []string{rental.NewRentalID("b2", "CCCCCCCCCCCCCCCCCCCCCC"), rental.NewRentalID("b9", "AAAAAAAAAAAAAAAAAAAAAA"), "<script>", ""} {
			if _, err := h.RefundMadeByHand(ctx, unknown, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-1", RecordedBy: "op-1"}, meta); !errors.Is(err, rentalview.ErrNotFound) {
				t.Errorf("rental %q: %v, want rentalview.ErrNotFound", unknown, err)
			}
		}
	})
}

// TestConcurrentRefundsMadeByHandRecordOne: two operators recording the same refund
// at once race on the payment stream's version; one is recorded, the other refused.
func TestConcurrentRefundsMadeByHandRecordOne(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		h := command.New(store, command.WithProvider(generic.Provider{}))
		id := owedRental(t, h, "b1")
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = h.RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-1", RecordedBy: "op"}, command.Meta{})
			})
		}
		wg.Wait()
		ok, refused := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, payment.ErrRefundAlreadyRecorded):
				refused++
			default:
				t.Errorf("unexpected: %v", err)
			}
		}
		recs, err := store.Read(ctx, payment.StreamID(payment.ReferenceFor(id)), 0)
		if err != nil {
			t.Fatal(err)
		}
		made := 0
		for _, r := range recs {
			if r.Type == "RefundMadeByHand" {
				made++
			}
		}
		if ok != 1 || refused != n-1 || made != 1 {
			t.Fatalf("%d recorded, %d refused, %d RefundMadeByHand in the stream; want 1, %d, 1", ok, refused, made, n-1)
		}
	})
}

// TestARefundMadeByHandNeedsNoProvider: nothing is asked of a provider, so a
// handler without one (as rentalctl opens it) records it.
func TestARefundMadeByHandNeedsNoProvider(t *testing.T) {
	store := eventstore.NewMemory()
	id := owedRental(t, command.New(store, command.WithProvider(generic.Provider{})), "b1")
	if res, err := command.New(store).RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{Amount: 1500, OperatorReference: "bank-1", RecordedBy: "op"}, command.Meta{}); err != nil || res.Payment.Refund != payment.RefundStatusMadeByHand {
		t.Fatalf("without a provider: %+v, %v", res, err)
	}
}

// TestConcurrentRecordsOfARefundOwedOnAnotherPaymentRecordOne: operators recording
// the refund owed on another provider payment at once race on the payment stream's
// version, as for the payment's own: one is recorded, the others refused, and the
// rental's own refund stays owed.
func TestConcurrentRecordsOfARefundOwedOnAnotherPaymentRecordOne(t *testing.T) {
	storesOf(t, func(t *testing.T, store eventstore.Store) {
		h := command.New(store, command.WithProvider(generic.Provider{}))
		id := owedRental(t, h, "b1")
		ref := payment.ReferenceFor(id)
		if _, err := h.Payment(ctx, payment.OweUnexpectedRefund{Reference: ref, PaymentID: "pi_other", Amount: 700, Currency: "USD"}, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, errs[i] = h.RefundMadeByHand(ctx, id, payment.RecordRefundMadeByHand{PaymentID: "pi_other", Amount: 700, OperatorReference: "bank-2", RecordedBy: "op"}, command.Meta{})
			})
		}
		wg.Wait()
		ok, refused := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, payment.ErrRefundAlreadyRecorded):
				refused++
			default:
				t.Errorf("unexpected: %v", err)
			}
		}
		recs, err := store.Read(ctx, payment.StreamID(ref), 0)
		if err != nil {
			t.Fatal(err)
		}
		made := 0
		for _, r := range recs {
			if r.Type == "UnexpectedRefundMadeByHand" {
				made++
			}
		}
		s, _, err := h.LoadPayment(ctx, ref)
		if err != nil || ok != 1 || refused != n-1 || made != 1 || s.Refund != payment.RefundStatusOwed {
			t.Fatalf("%d recorded, %d refused, %d UnexpectedRefundMadeByHand in the stream, own refund %q (%v); want 1, %d, 1, owed", ok, refused, made, s.Refund, err, n-1)
		}
	})
}
