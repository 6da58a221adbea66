// Package deadlinekinds declares the service's kinds of deadline over the domain's
// events and commands, each a value of the deadlines module's Kind whose Changes and
// Command are named types of this package:
//
//   - the payment due: PaymentPrepared opens it, its confirmation, rejection or
//     cancellation settles it (PaymentChanges); overdue, CancelPayment sends
//     CancelRentalPayment;
//   - the process stuck: BikeRequested opens it, the process's completion settles
//     it (ProcessChanges); overdue, RepairStuck mends the rental, one at a time;
//   - the return due: RequestApproved takes the stuck row over, BikeReturned
//     settles it (ReturnChanges); overdue, FlagOverdueReturn flags it;
//   - the overdue return: ReturnOverdue takes the return due over, BikeReturned
//     settles it (OverdueChanges); worked off by hand, listed as a return;
//   - the refund owed: RefundOwed opens the rental's own, PaymentRefunded or
//     RefundMadeByHand settles it; UnexpectedRefundOwed opens one per other
//     provider payment, UnexpectedRefundMadeByHand settles it (RefundChanges);
//     worked off by hand;
//   - the cancellation owed to the provider: CancellationOwedAtProvider opens it,
//     the provider's confirmation or a success meanwhile settles it
//     (CancellationChanges); overdue at once, RetryCancellation makes it, backing
//     off while the provider leaves it unanswered;
//   - the redelivery of a parked stream record: StreamRecordParked opens it,
//     StreamRecordRedelivered settles it (RedeliveryChanges); overdue at once,
//     Redeliver delivers the stream's parked records again, in order, backing off
//     while they fail.
//
// It also holds the shapes the operator API and the CLI read rows in (Pending,
// Open, Backlog) and the listings that read them. The deadlines module works over
// the kinds without knowing what they are about (docs/decisions/0020-deadline-kinds.md,
// docs/decisions/0036-deadlines-a-module-of-its-own.md).
package deadlinekinds

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/bikerental/bikerental/deadlines"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// The kinds' names: in rows, summaries, metrics and the operator API.
const (
	Payment = "payment"
	Stuck   = "stuck"
)

// StuckPrefix starts the key of a process-stuck row: the process's stream id.
var StuckPrefix = rentalpayment.StreamID("")

// PaymentPrefix starts the key of a payment-due row: the payment's reference
// (payment.ReferenceFor).
var PaymentPrefix = payment.ReferenceFor("")

// Canceller sends CancelRentalPayment; *process.Process is one.
type Canceller interface {
	CancelRentalPayment(ctx context.Context, rentalID string, meta command.Meta) (process.Outcome, error)
}

// StuckRepairer mends a stuck rental where that is safe; *repair.Repairer is one.
type StuckRepairer interface {
	// RepairStuck repairs the rental if its case is one that needs no operator,
	// says whether it did, and why.
	RepairStuck(ctx context.Context, rentalID string) (repaired bool, reason string, err error)
}

// Receivers are who the kinds' commands go to; a nil one leaves its kind's overdue
// rows reported, and nothing sent.
type Receivers struct {
	Canceller   Canceller
	Repairer    StuckRepairer
	Flagger     Flagger
	Retrier     Retrier
	Redeliverer Redeliverer
}

// PaymentKind is the payment due: PaymentPrepared opens a rental's payment's row,
// due after the payment timeout; its confirmation, rejection or cancellation
// settles it (PaymentChanges); overdue, CancelPayment asks the process to give up,
// which the payment side declines once the payment is confirmed.
func PaymentKind(p Policy, c Canceller) deadlines.Kind {
	k := deadlines.Kind{Name: Payment, Prefix: PaymentPrefix, After: p.PaymentTimeout(), Changes: PaymentChanges{},
		Work: deadlines.Send{}, Valid: ident.Valid, Ordered: true}
	if c != nil {
		k.Work = deadlines.Send{Command: CancelPayment{Canceller: c}}
	}
	return k
}

// CancelPayment is the payment due's command: CancelRentalPayment, which the
// process answers cancelled (Acted), declined (Declined: the payment was
// confirmed meanwhile) or with nothing to do.
type CancelPayment struct {
	Canceller Canceller
}

// Send implements deadlines.Command.
func (c CancelPayment) Send(ctx context.Context, row deadlines.Row, cause string) (deadlines.Outcome, error) {
	outcome, err := c.Canceller.CancelRentalPayment(ctx, row.Subject, command.Meta{CausationID: cause})
	switch {
	case err != nil:
		return "", err
	case outcome == process.OutcomeCancelled:
		return deadlines.Acted, nil
	case outcome == process.OutcomeDeclined:
		return deadlines.Declined, nil
	}
	return deadlines.NothingToDo, nil
}

// StuckKind is the process stuck: BikeRequested opens a rental's process's row,
// due after the payment timeout plus the grace; the process's completion settles
// it (ProcessChanges); overdue, RepairStuck mends the rental if its case needs no
// operator, and otherwise declines it, leaving it for one. It yields to the
// payment due: a rental whose payment the same sweep found overdue is being
// cancelled.
func StuckKind(p Policy, r StuckRepairer) deadlines.Kind {
	k := deadlines.Kind{Name: Stuck, Prefix: StuckPrefix, After: p.PaymentTimeout() + p.StuckGrace(), Changes: ProcessChanges{},
		Work: deadlines.Send{OneAtATime: true}, Valid: ident.Valid, Yields: []string{Payment}}
	if r != nil {
		k.Work = deadlines.Send{Command: RepairStuck{Repairer: r}, OneAtATime: true}
	}
	return k
}

// RepairStuck is the process stuck's command: the repair, which mends the rental
// (Acted) or declines it for an operator, with its case as the detail.
type RepairStuck struct {
	Repairer StuckRepairer
}

// Send implements deadlines.Command.
func (c RepairStuck) Send(ctx context.Context, row deadlines.Row, _ string) (deadlines.Outcome, error) {
	repaired, reason, err := c.Repairer.RepairStuck(ctx, row.Subject)
	attrs := []slog.Attr{slog.String("rentalId", row.Subject), slog.String("case", reason)}
	switch {
	case err != nil:
		return "", fmt.Errorf("repair %s (%s): %w", row.Subject, reason, err)
	case repaired:
		slog.LogAttrs(ctx, slog.LevelInfo, "sweep: stuck rental repaired", attrs...)
		return deadlines.Acted, nil
	}
	slog.LogAttrs(ctx, slog.LevelInfo, "sweep: stuck rental left for an operator", attrs...)
	return deadlines.Declined, nil
}

// Declare returns the service's kinds under policy p, their commands sent to r: the
// payment due, the process stuck and the return due, whose rental period is
// rental.DefaultPeriod unless an option says otherwise, the overdue return and
// the refund owed, which operators work off by hand, and the cancellation owed to
// the provider and the parked record's redelivery, due at once.
func Declare(p Policy, r Receivers, opts ...Option) (deadlines.Kinds, error) {
	o := options{period: rental.DefaultPeriod}
	for _, opt := range opts {
		opt(&o)
	}
	return deadlines.NewKinds(PaymentKind(p, r.Canceller), StuckKind(p, r.Repairer), ReturnKind(p, o.period, r.Flagger), OverdueKind(o.period), RefundKind(),
		CancellationKind(r.Retrier), RedeliveryKind(r.Redeliverer))
}

// listed is what Listed returns, from the declaration itself: every kind's
// listing but the owed cancellations' and the parked records', the service's own
// retries, which the sweep works off and operators read apart (rentalctl
// cancellations, rentalctl parked).
var listed = func() []string {
	ks, err := Declare(Policy{}, Receivers{})
	if err != nil {
		panic(err) // a mistake in the declaration, never in what is read
	}
	return slices.DeleteFunc(ks.Listings(), func(name string) bool { return name == Cancellation || name == Redelivery })
}()

// Listed returns the names the to-do list gives its rows (GET /deadlines's kind,
// rentalctl pending --kind), sorted, in a new slice: the operators' to-do list,
// without the owed cancellations and the parked records.
func Listed() []string { return slices.Clone(listed) }

// Option changes a declaration.
type Option func(*options)

type options struct{ period time.Duration }

// WithRentalPeriod sets how long an approved rental lasts (RENTAL_PERIOD).
func WithRentalPeriod(d time.Duration) Option { return func(o *options) { o.period = d } }

// MustDeclare is Declare for a policy known to be valid (tests).
func MustDeclare(p Policy, r Receivers, opts ...Option) deadlines.Kinds {
	ks, err := Declare(p, r, opts...)
	if err != nil {
		panic(err)
	}
	return ks
}

// PaymentChanges reads the payment due's records: PaymentPrepared opens, a
// settling event settles, with how; payments of no rental are no row of it.
type PaymentChanges struct{}

// Change implements deadlines.Changes.
func (PaymentChanges) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	c, ok, err := PaymentChangeOf(r)
	if err != nil || !ok {
		return deadlines.Change{}, false, err
	}
	rentalID, err := payment.RentalIDFor(c.Reference)
	if err != nil {
		return deadlines.Change{}, false, nil // not a rental's payment: nothing will ever sweep it
	}
	return deadlines.Change{Subject: rentalID, Settled: c.Settled != "", How: c.Settled}, true, nil
}

// ProcessChanges reads the process stuck's records: BikeRequested opens, the
// process's completion settles, but an approved one: the approval it follows
// (RequestApproved) settles the row by taking it over as the return due.
type ProcessChanges struct{}

// Change implements deadlines.Changes.
func (ProcessChanges) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	c, ok, err := ProcessChangeOf(r)
	if err != nil || !ok || c.Approved {
		return deadlines.Change{}, false, err
	}
	ch := deadlines.Change{Subject: c.RentalID, Settled: c.Completed}
	if c.Completed {
		ch.How = "completed"
	}
	return ch, true, nil
}
