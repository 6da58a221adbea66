package deadlinekinds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// Cancellation is the name of the kind of the cancellations owed to the provider.
const Cancellation = "cancellation"

// CancellationPrefix starts the key of an owed cancellation's row; the rest is the
// payment's reference, so that the key is the payment's stream id.
var CancellationPrefix = payment.StreamID("")

// The backoff of an owed cancellation whose retry the provider leaves unanswered:
// retried when it becomes owed, a minute later, and then after waits that double
// up to an hour. With a sweep a minute, a provider that stays down is asked about
// 7 times in its first hour, then once an hour, rather than 60 times an hour
// (docs/decisions/0013-cancellations-owed-to-the-provider.md).
var CancellationRetry = deadlines.Backoff{First: time.Minute, Max: time.Hour}

// Retrier makes a cancellation owed to the provider, naming what caused the retry
// in meta, and says whether it is still owed; *command.Handler is one.
type Retrier interface {
	RetryCancellation(ctx context.Context, reference string, meta command.Meta) (owed bool, err error)
}

// CancellationKind is the cancellation owed to the provider: a payment this service
// cancelled whose cancellation the provider has not confirmed
// (CancellationOwedAtProvider) has a row, due at once, until the provider confirms
// it (CancellationDoneAtProvider) or a success arrives meanwhile
// (PaymentSucceededAfterCancellation, which is refunded). Overdue,
// RetryCancellation makes it; one the provider leaves unanswered is recorded
// (CancellationStillOwed) and sent again after CancellationRetry, its row due since
// it became owed, so that the sweep counts it overdue for as long as it is owed.
// Its records are all in the payment's stream (Ordered): a cancellation owed again
// after one was confirmed opens the row again.
func CancellationKind(r Retrier) deadlines.Kind {
	k := deadlines.Kind{Name: Cancellation, Prefix: CancellationPrefix, Changes: CancellationChanges{}, Valid: validReference,
		Work: deadlines.Send{Retry: CancellationRetry}, Ordered: true}
	if r != nil {
		k.Work = deadlines.Send{Command: RetryCancellation{Retrier: r}, Retry: CancellationRetry}
	}
	return k
}

// validReference reports whether s is a rental's payment reference.
func validReference(s string) bool {
	_, err := payment.RentalIDFor(s)
	return err == nil
}

// ErrStillOwed reports a retried cancellation the provider left unanswered.
var ErrStillOwed = errors.New("deadlinekinds: the cancellation is still owed to the provider")

// RetryCancellation is the owed cancellation's command: RetryCancellation, which
// the provider confirms (Acted) or leaves unanswered (ErrStillOwed: the sweep
// sends it again after its backoff).
type RetryCancellation struct {
	Retrier Retrier
}

// Send implements deadlines.Command.
func (c RetryCancellation) Send(ctx context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
	owed, err := c.Retrier.RetryCancellation(ctx, row.Subject, command.Meta{CausationID: cause})
	switch {
	case err != nil:
		return "", err
	case owed:
		return "", fmt.Errorf("%w: %s", ErrStillOwed, row.Subject)
	}
	return deadlines.Acted, nil
}

// CancellationChanges reads the owed cancellation's records:
// CancellationOwedAtProvider opens, CancellationDoneAtProvider and
// PaymentSucceededAfterCancellation settle; payments of no rental are no row of it.
type CancellationChanges struct{}

// How an owed cancellation's row settles.
const SettledCancelled = "cancelled"

// Change implements deadlines.Changes.
func (CancellationChanges) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	opens := r.Type == payment.CancellationOwedAtProvider{}.EventType()
	if !opens && r.Type != (payment.CancellationDoneAtProvider{}).EventType() && r.Type != (payment.PaymentSucceededAfterCancellation{}).EventType() {
		return deadlines.Change{}, false, nil
	}
	e, err := payment.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return deadlines.Change{}, false, fmt.Errorf("%w: %s version %d: %w", deadlines.ErrCorruptRecord, r.Stream, r.Position, err)
	}
	ref := payment.ReferenceOf(e)
	if !validReference(ref) {
		return deadlines.Change{}, false, nil
	}
	if opens {
		return deadlines.Change{Subject: ref}, true, nil
	}
	return deadlines.Change{Subject: ref, Settled: true, How: SettledCancelled}, true, nil
}

// OwedCancellation is one payment cancelled here whose cancellation the provider
// has not confirmed yet, with the time it was found owed.
type OwedCancellation struct {
	Reference string    `json:"paymentReference"`
	RentalID  string    `json:"rentalId"`
	OwedAt    time.Time `json:"owedAt"`
}

// OwedCancellationOf is the owed cancellation of a row of the kind: it was due when
// it became owed.
func OwedCancellationOf(row deadlines.Row) OwedCancellation {
	rentalID, _ := payment.RentalIDFor(row.Subject)
	return OwedCancellation{Reference: row.Subject, RentalID: rentalID, OwedAt: row.Due}
}
