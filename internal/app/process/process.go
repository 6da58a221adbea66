// Package process runs the rental-payment process: on a bike request it asks the
// payment side for money, when the payment settles it approves or rejects the
// request, and it gives up when asked to (CancelRentalPayment). It keeps its state
// as its own events, decided by the pure decider in package rentalpayment, and reads
// back only those.
package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/lib/emf"
)

// Commands sends commands to the rental and payment sides. *command.Handler is one.
type Commands interface {
	Bike(ctx context.Context, c rental.Command, meta command.Meta) (command.Result[rental.Bike], error)
	Payment(ctx context.Context, c payment.Command, meta command.Meta) (command.Result[payment.Payment], error)
	// Refund sends back the money of a late success; it does nothing when no refund
	// is due.
	Refund(ctx context.Context, reference string, meta command.Meta) (payment.Payment, error)
}

var _ Commands = (*command.Handler)(nil)

// Outcome is the answer to CancelRentalPayment.
type Outcome string

// The outcomes of CancelRentalPayment.
const (
	OutcomeCancelled   Outcome = "cancelled"     // the payment was called off
	OutcomeDeclined    Outcome = "declined"      // the payment was already confirmed
	OutcomeNothingToDo Outcome = "nothing-to-do" // no process, or it already ended
)

// RecordingMode selects how the process writes its own events. Both are proven by
// the same tests.
type RecordingMode string

const (
	// RecordByAppend appends directly from the reaction, at the version of the state
	// the reaction read: a concurrent writer makes the append fail.
	RecordByAppend RecordingMode = "append"
	// RecordByCommand sends RecordPaymentRequested or RecordProcessCompleted to the
	// process's own command handler, the only writer of its stream, which reads the
	// stream again and appends idempotently.
	RecordByCommand RecordingMode = "command"
)

// ParseRecordingMode reads a RECORDING_MODE setting; empty means RecordByAppend.
func ParseRecordingMode(s string) (RecordingMode, error) {
	switch RecordingMode(s) {
	case "", RecordByAppend:
		return RecordByAppend, nil
	case RecordByCommand:
		return RecordByCommand, nil
	}
	return "", fmt.Errorf("rentalpayment: recording mode %q: want %q or %q", s, RecordByAppend, RecordByCommand)
}

// Price is what a rental costs.
type Price struct {
	Amount   int64  // in minor units (cents)
	Currency string // ISO 4217
}

// Config configures a Process.
type Config struct {
	Store    eventstore.Store
	Commands Commands
	Mode     RecordingMode
	Price    Price
	Logger   *slog.Logger
	// Retry bounds how often a reaction is run again after a concurrency conflict
	// on the process's stream.
	Retry eventstore.RetryPolicy
	// MetricsService is the Service dimension of the payment metrics (RefundsOwed,
	// ProviderEventMismatches, CancellationsOwed).
	MetricsService string
	// Metrics, if not nil, receives the payment metrics, one Embedded Metric
	// Format document each, with the dimension Service=MetricsService.
	Metrics *emf.Writer
}

// MetricsNamespace is the CloudWatch namespace of the payment metrics.
const MetricsNamespace = "BikeRental/Payments"

// The payment metrics the process emits, with the dimension Service; the
// template's alarms watch them.
const (
	MetricRefundsOwed             = "RefundsOwed"
	MetricProviderEventMismatches = "ProviderEventMismatches"
	MetricCancellationsOwed       = "CancellationsOwed"
)

// Process is the rental-payment process. It is safe for concurrent use; every
// method is idempotent, because deliveries and commands arrive at least once.
type Process struct {
	commands Commands
	// streams runs the process's own streams: the one load, decide and append of
	// package command.
	streams  command.Runner[rentalpayment.State, rentalpayment.Event, rentalpayment.Command]
	recorder recorder
	price    Price
	logger   *slog.Logger
	retry    eventstore.RetryPolicy
	metrics  *emf.Writer
	service  string
}

// processes is the process's decider as the runner uses it: its events are tagged
// with, and correlated by, their rental.
var processes = command.Decider[rentalpayment.State, rentalpayment.Event, rentalpayment.Command]{
	Fold: rentalpayment.Fold, Evolve: rentalpayment.Evolve, Decide: rentalpayment.Decide, Decode: rentalpayment.DecodeEvent,
	Rental: rentalpayment.RentalOf,
	Tags:   func(e rentalpayment.Event) []string { return []string{"rental:" + rentalpayment.RentalOf(e)} },
}

// New returns the process for cfg.
func New(cfg Config) (*Process, error) {
	mode, err := ParseRecordingMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	if cfg.Price.Amount <= 0 || len(cfg.Price.Currency) != 3 {
		return nil, fmt.Errorf("rentalpayment: invalid price %d %q", cfg.Price.Amount, cfg.Price.Currency)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Retry.MaxAttempts == 0 {
		cfg.Retry = eventstore.DefaultRetryPolicy
	}
	p := &Process{commands: cfg.Commands, price: cfg.Price, logger: cfg.Logger, retry: cfg.Retry, metrics: cfg.Metrics, service: cfg.MetricsService,
		streams: command.Runner[rentalpayment.State, rentalpayment.Event, rentalpayment.Command]{Decider: processes, Store: cfg.Store, Retry: cfg.Retry, NewID: ident.UUID}}
	if mode == RecordByCommand {
		p.recorder = commandRecorder{p}
	} else {
		p.recorder = appendRecorder{p}
	}
	return p, nil
}

// Snapshot is the process's state as read from its stream, with what it was read
// from. Only Process.load makes a usable one, so nothing can record an event
// without having read the state that event is guarded by.
type Snapshot struct {
	State  rentalpayment.State
	loaded command.Loaded[rentalpayment.State]
}

func (p *Process) load(ctx context.Context, rentalID string) (Snapshot, error) {
	l, err := p.streams.Load(ctx, rentalpayment.StreamID(rentalID))
	if err != nil {
		return Snapshot{}, err
	}
	s := l.State
	if s.RentalID == "" {
		s.RentalID = rentalID
	}
	return Snapshot{State: s, loaded: l}, nil
}

// recorder writes the process's own events, by one of the two mechanisms.
type recorder interface {
	record(ctx context.Context, rentalID string, snap Snapshot, c rentalpayment.Command, meta command.Meta) error
}

// errUnread is what recording from a Snapshot that did not come from a read gets.
var errUnread = command.ErrUnread

// appendRecorder appends at the version of the snapshot the reaction read
// (command.Runner.RunOnce): a writer that appended meanwhile makes it fail.
type appendRecorder struct{ p *Process }

func (a appendRecorder) record(ctx context.Context, rentalID string, snap Snapshot, c rentalpayment.Command, meta command.Meta) error {
	_, err := a.p.streams.RunOnce(ctx, snap.loaded, c, correlated(rentalID, meta))
	return err
}

// commandRecorder sends the recording command to the process's command handler.
type commandRecorder struct{ p *Process }

func (c commandRecorder) record(ctx context.Context, rentalID string, snap Snapshot, cmd rentalpayment.Command, meta command.Meta) error {
	if !snap.loaded.Read() {
		return errUnread
	}
	return c.p.HandleRecording(ctx, rentalID, cmd, meta)
}

// HandleRecording is the command handler of RecordPaymentRequested and
// RecordProcessCompleted, the only writer of the process's stream in command mode:
// it reads the stream, decides, and appends, retrying concurrency conflicts
// (command.Runner.Run). Recording what is already recorded succeeds and appends
// nothing.
func (p *Process) HandleRecording(ctx context.Context, rentalID string, cmd rentalpayment.Command, meta command.Meta) error {
	_, err := p.streams.Run(ctx, rentalpayment.StreamID(rentalID), cmd, correlated(rentalID, meta))
	return err
}

// correlated is meta for the process's own events, which are always correlated by
// their rental.
func correlated(rentalID string, meta command.Meta) command.Meta {
	meta.CorrelationID = rentalID
	return meta
}

// Handle reacts to one event record of the Events table: BikeRequested starts the
// process, PaymentConfirmed, PaymentRejected and PaymentCancelled end it; a late
// success is refunded, money another provider payment took that the provider did
// not refund (MismatchRefundOwed) is recorded owed on the payment, and a refund
// owed or a cancellation owed to the provider is reported as a metric; every other
// type is ignored. It is idempotent: a record handled twice, or handled again after
// a crash anywhere inside, ends in the same state as handled once. A settled payment
// whose process has not started yet returns an error matching ErrProcessNotStarted,
// so that the record is retried rather than dropped.
func (p *Process) Handle(ctx context.Context, r eventstore.Record) error {
	var react func() error
	switch {
	case r.Type == rental.BikeRequested{}.EventType():
		e, err := eventstore.Decode[rental.BikeRequested](r, rental.DecodeEvent)
		if err != nil {
			return err
		}
		react = func() error { return p.onBikeRequested(ctx, r, e) }
	case payment.Settles(r.Type):
		e, err := eventstore.Decode[payment.Event](r, payment.DecodeEvent)
		if err != nil {
			return err
		}
		react = func() error { return p.onPaymentSettled(ctx, r, e) }
	case r.Type == payment.PaymentSucceededAfterCancellation{}.EventType():
		// The money arrived for a rental that did not get its bike: it goes back.
		// The webhook that recorded it refunds too; this is the retried path.
		e, err := eventstore.Decode[payment.PaymentSucceededAfterCancellation](r, payment.DecodeEvent)
		if err != nil {
			return err
		}
		_, err = p.commands.Refund(ctx, e.Reference, command.Meta{CorrelationID: r.CorrelationID, CausationID: r.ID})
		return err
	case r.Type == payment.RefundOwed{}.EventType():
		e, err := eventstore.Decode[payment.RefundOwed](r, payment.DecodeEvent)
		if err != nil {
			return err
		}
		p.refundOwed(ctx, r, e)
		return nil
	case r.Type == payment.UnexpectedRefundOwed{}.EventType():
		e, err := eventstore.Decode[payment.UnexpectedRefundOwed](r, payment.DecodeEvent)
		if err != nil {
			return err
		}
		p.unexpectedRefundOwed(ctx, r, e)
		return nil
	case r.Type == command.MismatchRefundOwed{}.EventType():
		e, err := eventstore.Decode[command.MismatchRefundOwed](r, command.DecodeEvent)
		if err != nil {
			return err
		}
		return p.onMismatchRefundOwed(ctx, r, e)
	case r.Type == command.ProviderEventMismatched{}.EventType():
		e, err := eventstore.Decode[command.ProviderEventMismatched](r, command.DecodeEvent)
		if err != nil {
			return err
		}
		p.mismatched(ctx, r, e)
		return nil
	case r.Type == payment.CancellationOwedAtProvider{}.EventType():
		e, err := eventstore.Decode[payment.CancellationOwedAtProvider](r, payment.DecodeEvent)
		if err != nil {
			return err
		}
		p.cancellationOwed(ctx, r, e)
		return nil
	default:
		return nil
	}
	// A conflict means another delivery wrote the process's stream meanwhile: run the
	// reaction again from a fresh read; it finds its work done or does what is left.
	var err error
	for attempt := 1; attempt <= p.retry.MaxAttempts; attempt++ {
		if err = react(); !errors.Is(err, eventstore.ErrConcurrency) {
			return err
		}
	}
	return err
}

// refundOwed reports a refund owed: a warning in the log and the RefundsOwed metric
// in Embedded Metric Format, which the template's alarm watches. A redelivered
// record counts again; the alarm fires on any (a repair's delivery stands: count).
func (p *Process) refundOwed(ctx context.Context, r eventstore.Record, e payment.RefundOwed) {
	attrs := []slog.Attr{slog.String("paymentReference", e.Reference), slog.Int64("amount", e.Amount), slog.String("currency", e.Currency),
		slog.Time("owedSince", r.RecordedAt)}
	if e.Reason != "" { // what the provider refused, for the one who pays it back
		attrs = append(attrs, slog.String("reason", e.Reason))
	}
	p.count(ctx, r, "refund owed", MetricRefundsOwed, 1, attrs...)
}

// onMismatchRefundOwed records, on the payment whose reference a mismatched event
// named, the refund owed of the money that event reported taken on another
// provider payment, which the provider did not refund (MismatchRefundOwed, in the
// event's receipt stream): payment.OweUnexpectedRefund, which the payment records
// once per provider payment, so that the refund is listed with the refunds owed
// and made by hand on its own. Recording what is recorded already appends
// nothing; a refund made by hand is never owed again.
func (p *Process) onMismatchRefundOwed(ctx context.Context, r eventstore.Record, e command.MismatchRefundOwed) error {
	rentalID, err := payment.RentalIDFor(e.Reference)
	if err != nil {
		return fmt.Errorf("rentalpayment: %s version %d: %w", r.StreamID, r.Version, err)
	}
	c := payment.OweUnexpectedRefund{Reference: e.Reference, PaymentID: e.PaymentID, Amount: e.Amount, Currency: e.Currency, Reason: e.Reason}
	// Its cause is the receipt's: the provider's event, which the rental's timeline
	// names (the receipt's own records are in no stream of the rental's).
	cause := r.CausationID
	if cause == "" {
		cause = r.ID
	}
	if _, err := p.commands.Payment(ctx, c, command.Meta{CorrelationID: rentalID, CausationID: cause}); err != nil {
		return fmt.Errorf("rentalpayment: owe the refund of provider payment %s under %s: %w", e.PaymentID, e.Reference, err)
	}
	return nil
}

// unexpectedRefundOwed reports a refund owed on another provider payment than the
// one recorded, as refundOwed reports the payment's own: a warning and the
// RefundsOwed metric, once per delivery (a repair's delivery stands: count).
func (p *Process) unexpectedRefundOwed(ctx context.Context, r eventstore.Record, e payment.UnexpectedRefundOwed) {
	attrs := []slog.Attr{slog.String("paymentReference", e.Reference), slog.String("providerPaymentId", e.PaymentID),
		slog.Int64("amount", e.Amount), slog.String("currency", e.Currency), slog.Time("owedSince", r.RecordedAt)}
	if e.Reason != "" {
		attrs = append(attrs, slog.String("reason", e.Reason))
	}
	p.count(ctx, r, "refund owed on another provider payment", MetricRefundsOwed, 1, attrs...)
}

type repairingKey struct{}

// Repairing returns ctx marked for a repair's deliveries of records that were
// recorded before the repair began: the process's reactions decide exactly as
// always, but what only reports (a refund owed) says that its report stands instead
// of making it again.
func Repairing(ctx context.Context) context.Context {
	return context.WithValue(ctx, repairingKey{}, true)
}

func repairing(ctx context.Context) bool {
	v, _ := ctx.Value(repairingKey{}).(bool)
	return v
}

// cancellationOwed reports a cancellation owed to the provider: a warning and the
// CancellationsOwed metric, which the template's alarm watches (the sweep makes the
// cancellation later, and reports those still owed after each run). A redelivered
// record counts again; the alarm fires on any (a repair's delivery stands: count).
func (p *Process) cancellationOwed(ctx context.Context, r eventstore.Record, e payment.CancellationOwedAtProvider) {
	p.count(ctx, r, "cancellation owed to the provider", MetricCancellationsOwed, 1,
		slog.String("paymentReference", e.Reference), slog.String("paymentId", e.PaymentID), slog.Int("attempts", e.Attempts))
}

// mismatched reports a provider event that did not match what was recorded for its
// payment: a warning and the ProviderEventMismatches metric, which the template's
// alarm watches. A refund reported on a provider payment that is not the recorded
// one (as the service's own refund of money taken there reports) gives back money
// rather than taking it: it is logged, and counts 0. A redelivered record counts
// again; the alarm fires on any (a repair's delivery stands: count).
func (p *Process) mismatched(ctx context.Context, r eventstore.Record, e command.ProviderEventMismatched) {
	n := 1
	if e.Kind == payment.ProviderRefunded {
		n = 0
	}
	attrs := []slog.Attr{slog.String("provider", e.Provider), slog.String("providerEventId", e.EventID), slog.String("kind", string(e.Kind)),
		slog.String("paymentReference", e.Reference), slog.Any("fields", e.Fields),
		slog.String("providerPaymentId", e.PaymentID), slog.Int64("amount", e.Amount), slog.String("currency", e.Currency),
		slog.String("recordedPaymentId", e.RecordedPaymentID), slog.Int64("recordedAmount", e.RecordedAmount), slog.String("recordedCurrency", e.RecordedCurrency),
		slog.Bool("refundDue", e.RefundDue)}
	p.count(ctx, r, "provider event does not match its payment", MetricProviderEventMismatches, n, attrs...)
}

// count logs a warning, then writes n counts of metric as one Embedded Metric
// Format document of its own (MetricsNamespace, the dimension Service), stamped
// with the record's time. A document that cannot be written is logged, not
// returned: the record's reaction is done either way. A repair's delivery counts
// nothing: it logs, at info level, that what the record reported stands.
func (p *Process) count(ctx context.Context, r eventstore.Record, msg, metric string, n int, attrs ...slog.Attr) {
	attrs = append(attrs, slog.String("eventId", r.ID))
	if repairing(ctx) {
		// A repair's delivery of a record written before it (Repairing) reports
		// nothing new: what it said stands, and is not counted again.
		p.logger.LogAttrs(ctx, slog.LevelInfo, msg+" stands", attrs...)
		return
	}
	p.logger.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
	if p.metrics == nil {
		return
	}
	err := p.metrics.Write(emf.Document{Namespace: MetricsNamespace, Timestamp: r.RecordedAt,
		Dimensions: []emf.Dimension{{Name: "Service", Value: p.service}},
		Metrics:    []emf.Metric{{Name: metric, Unit: "Count", Value: float64(n)}}})
	if err != nil {
		p.logger.LogAttrs(ctx, slog.LevelError, msg+": metric not written", append(attrs, slog.String("error", err.Error()))...)
	}
}

func (p *Process) onBikeRequested(ctx context.Context, r eventstore.Record, e rental.BikeRequested) error {
	snap, err := p.load(ctx, e.RentalID)
	if err != nil || snap.State.Started() {
		return err
	}
	meta := command.Meta{CorrelationID: e.RentalID, CausationID: r.ID}
	ref := payment.ReferenceFor(e.RentalID)
	prepare := payment.PreparePayment{
		Reference: ref,
		PaymentID: "pay_" + ident.Derived(22, ref),
		Amount:    p.price.Amount,
		Currency:  p.price.Currency,
	}
	if _, err := p.commands.Payment(ctx, prepare, meta); err != nil {
		return fmt.Errorf("rentalpayment: prepare payment for rental %s: %w", e.RentalID, err)
	}
	return p.recorder.record(ctx, e.RentalID, snap, rentalpayment.RecordPaymentRequested{RentalPaymentRequested: rentalpayment.RentalPaymentRequested{
		RentalID: e.RentalID, BikeID: e.BikeID, Renter: e.Renter, Amount: prepare.Amount, Currency: prepare.Currency,
		BikeVersion: r.Version,
	}}, meta)
}

func (p *Process) onPaymentSettled(ctx context.Context, r eventstore.Record, e payment.Event) error {
	completion, _ := rentalpayment.CompletionFor(e.EventType())
	rentalID, err := payment.RentalIDFor(payment.ReferenceOf(e))
	if err != nil {
		return nil // not a rental's payment: not this process's business
	}
	snap, err := p.load(ctx, rentalID)
	if err != nil {
		return err
	}
	switch snap.State.Status {
	case rentalpayment.StatusCompleted:
		return nil
	case rentalpayment.StatusNotStarted:
		return fmt.Errorf("%w: rental %s, %s at %s version %d", rentalpayment.ErrProcessNotStarted, rentalID, r.Type, r.StreamID, r.Version)
	}
	s := snap.State
	meta := command.Meta{CorrelationID: rentalID, CausationID: r.ID}
	var tell rental.Command = rental.RejectRequest{BikeID: s.BikeID, Renter: s.Renter, RentalID: rentalID}
	if completion == rentalpayment.CompletedApproved {
		tell = rental.ApproveRequest{BikeID: s.BikeID, Renter: s.Renter, RentalID: rentalID}
	}
	if _, err := p.commands.Bike(ctx, tell, meta); err != nil {
		return fmt.Errorf("rentalpayment: tell bike %s about rental %s: %w", s.BikeID, rentalID, err)
	}
	return p.recorder.record(ctx, rentalID, snap, rentalpayment.RecordProcessCompleted{RentalPaymentProcessCompleted: rentalpayment.RentalPaymentProcessCompleted{
		RentalID: rentalID, Outcome: completion,
	}}, meta)
}

// CancelRentalPayment asks the process to give up on a rental's payment. For an
// unknown or completed process there is nothing to do. Otherwise it sends
// CancelPayment: the outcome is OutcomeCancelled if the payment was called off,
// OutcomeDeclined if it was already confirmed, and OutcomeNothingToDo if it had
// already been cancelled or rejected. It records nothing itself: the bike is released
// when the PaymentCancelled that follows reaches the process. Safe to send twice,
// late, and from anywhere.
func (p *Process) CancelRentalPayment(ctx context.Context, rentalID string, meta command.Meta) (Outcome, error) {
	snap, err := p.load(ctx, rentalID)
	if err != nil {
		return "", err
	}
	if snap.State.Status != rentalpayment.StatusRequested {
		return OutcomeNothingToDo, nil
	}
	if meta.CorrelationID == "" {
		meta.CorrelationID = rentalID
	}
	res, err := p.commands.Payment(ctx, payment.CancelPayment{Reference: payment.ReferenceFor(rentalID)}, meta)
	switch {
	case errors.Is(err, payment.ErrPaymentAlreadyConfirmed):
		return OutcomeDeclined, nil
	case err != nil:
		return "", fmt.Errorf("rentalpayment: cancel payment of rental %s: %w", rentalID, err)
	case len(res.Appended) == 0:
		return OutcomeNothingToDo, nil
	}
	return OutcomeCancelled, nil
}
