package rentalview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// movingStore is a store whose world moves on once: right after the first read of
// the stream named after returns (forward or backward), it runs then.
type movingStore struct {
	*eventstore.Memory
	after string
	then  func()
	once  sync.Once
}

func (m *movingStore) Read(ctx context.Context, streamID string, fromVersion int64) ([]eventstore.Record, error) {
	recs, err := m.Memory.Read(ctx, streamID, fromVersion)
	m.moved(streamID)
	return recs, err
}

func (m *movingStore) ReadBackward(ctx context.Context, streamID string, beforeVersion int64, limit int) ([]eventstore.Record, error) {
	recs, err := m.Memory.ReadBackward(ctx, streamID, beforeVersion, limit)
	m.moved(streamID)
	return recs, err
}

func (m *movingStore) moved(streamID string) {
	if streamID == m.after {
		m.once.Do(m.then)
	}
}

// TestAViewNeverShowsWhatTheRentalNeverWas reads a rental awaiting its payment
// while its story ends: the payment settles, the bike is told, the process records
// its completion, all between two of the view's reads, after each of its streams in
// turn. The view may show the rental as it stood before or as it was becoming, never
// a status it did not have: a payment read before its cancellation, beside a process
// read after the completion, once made a cancelled rental look rejected.
func TestAViewNeverShowsWhatTheRentalNeverWas(t *testing.T) {
	const bikeID, renter = "bike-7", "renter-7"
	rentalID := rental.NewRentalID(bikeID, "a1b2c3d4e5f6g7h8i9j0kl")
	ref := payment.ReferenceFor(rentalID)
	bikeStream, paymentStream, processStream := rental.StreamID(bikeID), payment.StreamID(ref), rentalpayment.StreamID(rentalID)

	endings := []struct {
		name      string
		settled   payment.Event
		told      rental.Event
		outcome   rentalpayment.Completion
		mayShow   []rentalview.Status // before, while and after the story ends
		finallyIs rentalview.Status
	}{
		{"cancelled", payment.PaymentCancelled{Reference: ref, PaymentID: "pay_1"},
			rental.RequestRejected{BikeID: bikeID, Renter: renter, RentalID: rentalID}, rentalpayment.CompletedCancelled,
			[]rentalview.Status{rentalview.StatusAwaitingPayment, rentalview.StatusCancelling, rentalview.StatusCancelled}, rentalview.StatusCancelled},
		{"rejected", payment.PaymentRejected{Reference: ref, PaymentID: "pay_1", Reason: "declined"},
			rental.RequestRejected{BikeID: bikeID, Renter: renter, RentalID: rentalID}, rentalpayment.CompletedRejected,
			[]rentalview.Status{rentalview.StatusAwaitingPayment, rentalview.StatusRejecting, rentalview.StatusRejected}, rentalview.StatusRejected},
		{"approved", payment.PaymentConfirmed{Reference: ref, PaymentID: "pay_1"},
			rental.RequestApproved{BikeID: bikeID, Renter: renter, RentalID: rentalID}, rentalpayment.CompletedApproved,
			[]rentalview.Status{rentalview.StatusAwaitingPayment, rentalview.StatusApproved}, rentalview.StatusApproved},
	}
	for _, end := range endings {
		for _, after := range []string{processStream, bikeStream, paymentStream} {
			t.Run(fmt.Sprintf("%s after the read of %s", end.name, after), func(t *testing.T) {
				ctx := context.Background()
				mem := eventstore.NewMemory()
				n := 0
				appendTo := func(stream string, events ...interface{ EventType() string }) {
					t.Helper()
					recs, err := mem.Read(ctx, stream, 0)
					if err != nil {
						t.Fatal(err)
					}
					var out []eventstore.Event
					for _, e := range events {
						data, err := json.Marshal(e)
						if err != nil {
							t.Fatal(err)
						}
						n++
						out = append(out, eventstore.Event{ID: fmt.Sprintf("event-%d", n), Type: e.EventType(), Data: data})
					}
					if _, err := mem.Append(ctx, stream, int64(len(recs)), out...); err != nil {
						t.Fatal(err)
					}
				}
				// The rental awaits its payment, as the service leaves it.
				appendTo(bikeStream, rental.BikeRegistered{BikeID: bikeID}, rental.BikeRequested{BikeID: bikeID, Renter: renter, RentalID: rentalID})
				appendTo(paymentStream, payment.PaymentPrepared{PaymentID: "pay_1", Reference: ref, Amount: 1500, Currency: "EUR"})
				appendTo(processStream, rentalpayment.RentalPaymentRequested{RentalID: rentalID, BikeID: bikeID, Renter: renter,
					Amount: 1500, Currency: "EUR", BikeVersion: 2})

				// The story ends, in the order the process writes it.
				store := &movingStore{Memory: mem, after: after, then: func() {
					appendTo(paymentStream, end.settled)
					appendTo(bikeStream, end.told)
					appendTo(processStream, rentalpayment.RentalPaymentProcessCompleted{RentalID: rentalID, Outcome: end.outcome})
				}}
				v, err := rentalview.Load(ctx, store, rentalID)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(end.mayShow, v.Status) {
					t.Errorf("read while its payment was %s, the rental shows %q; it was only ever one of %q", end.name, v.Status, end.mayShow)
				}
				if v, err = rentalview.Load(ctx, store, rentalID); err != nil || v.Status != end.finallyIs {
					t.Errorf("read once its story ended, the rental shows %q (%v), want %q", v.Status, err, end.finallyIs)
				}
			})
		}
	}
}
