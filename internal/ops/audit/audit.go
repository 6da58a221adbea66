// Package audit checks the invariants the service promises across its streams and
// the Deadlines table: versions without gaps, one process per rental that starts
// and ends once, one settlement per payment, no bike booked twice, a row of each
// kind of deadline for exactly what its events leave outstanding (read through the
// table's index, never a scan of it), and bikes told how their rental ended. It
// only reads, and reports what it finds as violations rather than failing on them.
package audit

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// EventsSource is what an audit reads of the Events table. *Dynamo is one.
type EventsSource interface {
	// StreamIDs calls fn at least once for every stream of the table, whatever
	// versions it holds (a stream that lacks version 1 is listed too), and may call
	// it more than once for the same id. fn is never called from two goroutines at
	// once. StreamIDs stops with fn's first error and returns it, or returns the
	// first read error, or nil once the whole table was listed.
	StreamIDs(ctx context.Context, fn func(streamID string) error) error
	// ReadStream calls fn with every item of streamID in ascending version order,
	// reading strongly consistently, page by page. An item that cannot be decoded is
	// passed on with its Err set, never dropped and never an error of ReadStream.
	// It stops with fn's first error and returns it, or returns the first read error.
	ReadStream(ctx context.Context, streamID string, fn func(Item) error) error
}

// Item is one stored event as the audit sees it: its key, and the record decoded
// from it or the reason it could not be.
type Item struct {
	StreamID string
	// Version is the item's version, or 0 when the stored one is not a positive
	// whole number.
	Version int64
	// Record is the decoded record; it is only meaningful when Err is nil.
	Record eventstore.Record
	// Err says why the item could not be decoded; it matches
	// eventstore.ErrCorruptRecord.
	Err error
}

// Invariant codes, stable across releases: scripts may match on them.
const (
	// VersionGap: a stream's versions do not run 1, 2, ... n (a gap, a duplicate,
	// or no version 1).
	VersionGap = "version-gap"
	// CorruptRecord: an item that cannot be decoded into a record, or whose
	// payload does not decode as the event its type names.
	CorruptRecord = "corrupt-record"
	// ProcessStartedTwice: more than one RentalPaymentRequested for a rental.
	ProcessStartedTwice = "process-started-twice"
	// ProcessNotStarted (quiet only): a BikeRequested whose rental has no
	// RentalPaymentRequested.
	ProcessNotStarted = "process-not-started"
	// ProcessCompletedTwice: more than one RentalPaymentProcessCompleted for a rental.
	ProcessCompletedTwice = "process-completed-twice"
	// PaymentSettledTwice: more than one PaymentConfirmed, PaymentRejected or
	// PaymentCancelled in one payment stream.
	PaymentSettledTwice = "payment-settled-twice"
	// BikeDoubleBooked: a BikeRequested while another rental of the same bike was
	// requested or rented.
	BikeDoubleBooked = "bike-double-booked"
	// ProcessNotCompleted (quiet only): a started process whose payment settled
	// but which recorded no completion.
	ProcessNotCompleted = "process-not-completed"
	// ProcessOutcomeMismatch: a completion whose outcome is not the payment's
	// settlement (approved for PaymentConfirmed, rejected for PaymentRejected,
	// cancelled for PaymentCancelled), or, when quiet, a completion whose payment
	// has not settled.
	ProcessOutcomeMismatch = "process-outcome-mismatch"
	// BikeNotTold (quiet only): a completed process whose bike does not show the
	// matching RequestApproved (approved) or RequestRejected (rejected, cancelled).
	BikeNotTold = "bike-not-told"
	// MoneyKept: the provider took the money for a payment already cancelled or
	// rejected (PaymentSucceededAfterCancellation) and there is neither a refund
	// (RefundRequested, PaymentRefunded, RefundMadeByHand) nor a refund owed
	// (RefundOwed), or the refund owed is for another amount or currency than the
	// late success took; or a
	// provider event reported money taken on a provider payment that is not the one
	// recorded (command.ProviderEventMismatched, RefundDue) and its stream records
	// neither its refund nor its being owed, or records it owed
	// (command.MismatchRefundOwed) while the payment records no refund owed on
	// that provider payment (payment.UnexpectedRefundOwed), so that no list shows
	// it; when not quiet, only once the late success or the mismatch is older
	// than the grace period.
	MoneyKept = "money-kept"
	// OpenMissing: a rental requested on its bike whose process has not completed
	// and for which the Deadlines table holds no outstanding row of the process
	// stuck, so the sweep cannot notice it stuck; when not quiet, only once the
	// request is older than the grace.
	OpenMissing = "open-missing"
	// OpenStale: an outstanding row of the process stuck for a rental whose process
	// completed; when not quiet, only once the completion is older than the grace.
	OpenStale = "open-stale"
	// RefundByHandUnfounded: a RefundMadeByHand that the service would have
	// refused (payment.Decide): in a payment stream that owed no refund before it
	// (no RefundOwed), for another amount or currency than the RefundOwed's, or
	// after the refund was recorded already (by hand or by the provider's
	// PaymentRefunded); only data written around the service (a hand edit, a bad
	// import) holds one. And a PaymentRefunded after a RefundMadeByHand: the
	// provider reports a refund of money an operator says went back by hand, so
	// the renter may have been paid twice. The same of an
	// UnexpectedRefundMadeByHand, against the UnexpectedRefundOwed of its provider
	// payment.
	RefundByHandUnfounded = "refund-by-hand-unfounded"
	// OwedMissing: a payment whose cancellation is owed to the provider
	// (CancellationOwedAtProvider, neither made since nor overtaken by a late
	// success) without an outstanding row of the cancellation kind in the Deadlines
	// table, so the sweep would never make it; when not quiet, only once it is older
	// than the grace.
	OwedMissing = "owed-missing"
	// OwedStale: an outstanding row of the cancellation kind for a payment that owes
	// the provider nothing (the cancellation was made, a success overtook it, or it
	// was never owed); when not quiet, only once that is older than the grace.
	OwedStale = "owed-stale"
)

// Violation is one broken invariant.
type Violation struct {
	// Invariant is one of the codes above.
	Invariant string `json:"invariant"`
	// Streams are the streams involved, sorted.
	Streams []string `json:"streams"`
	// Detail says what was found, for people.
	Detail string `json:"detail"`
	// Rental is the rental a stuck process belongs to, set for the violations that
	// `rentalctl repair` mends (process-not-started, process-not-completed,
	// bike-not-told, open-missing, open-stale, owed-missing, owed-stale, and
	// deadline-missing and deadline-stale of a rental's deadline).
	Rental string `json:"rental,omitempty"`
}

// String returns the violation on one line: code, streams, detail.
func (v Violation) String() string {
	out := fmt.Sprintf("%s %s: %s", v.Invariant, strings.Join(v.Streams, ","), v.Detail)
	if v.Rental != "" {
		out += " (repair: rentalctl repair " + v.Rental + ")"
	}
	return out
}

// Repairable lists the invariants a repair of the rental mends.
var Repairable = []string{ProcessNotStarted, ProcessNotCompleted, BikeNotTold, OpenMissing, OpenStale, OwedMissing, OwedStale, DeadlineMissing, DeadlineStale}

// stuck records the rental of the last violation when the repair mends it.
func (a *auditor) stuck(rentalID string) {
	v := &a.violations[len(a.violations)-1]
	if slices.Contains(Repairable, v.Invariant) {
		v.Rental = rentalID
	}
}

// Report is the result of an audit.
type Report struct {
	// Quiet reports whether the checks that need a quiet system ran.
	Quiet bool `json:"quiet"`
	// Streams and Records count what was read of the Events table.
	Streams int `json:"streams"`
	Records int `json:"records"`
	// Rentals counts the distinct rental ids seen in bike, process and payment
	// streams; Payments counts the payment streams.
	Rentals  int `json:"rentals"`
	Payments int `json:"payments"`
	// DeadlineRows counts the outstanding rows read of the Deadlines table, of
	// every kind, through its index.
	DeadlineRows int `json:"deadlineRows"`
	// Parked counts the stream records parked for the sweep to deliver again (the
	// redelivery kind's outstanding rows): work a consumer has not done yet, which
	// the sweep's redelivery does, not a violation. Whatever a parked record was to
	// do that is overdue shows as a violation of its own (a stuck rental, a missing
	// row).
	Parked int `json:"parked"`
	// RefundsOwed counts the refunds owed that no one has recorded made yet, each
	// on its own (a payment's own, and one per other provider payment that took
	// money under its reference): money operators still have to pay back. Not a
	// violation while each is listed; the deadline checks report one that is not.
	RefundsOwed int `json:"refundsOwed"`
	// Violations are sorted by invariant, then streams, then detail; never nil.
	Violations []Violation `json:"violations"`
}

// OK reports whether the audit found no violation.
func (r Report) OK() bool { return len(r.Violations) == 0 }

// Defaults of Options.
const (
	DefaultGrace       = 30 * time.Second
	DefaultConcurrency = 8
)

// Options configures an audit.
type Options struct {
	// Quiet says that nothing is in flight: every command has been handled and every
	// stream record delivered to the process and the projector. It enables the
	// checks that only hold then (process-not-started, process-not-completed,
	// bike-not-told, a completion whose payment has not settled) and the drift
	// checks for recent payments.
	Quiet bool
	// Grace, when not Quiet, is how far the projector may lag: a payment prepared or
	// settled less than Grace before the Deadlines table began to be read, or
	// later, is not reported as drift (nor is a row of an unknown payment opened
	// that recently). It covers the index's reads too, which are eventually
	// consistent. DefaultGrace when zero or negative.
	Grace time.Duration
	// Concurrency is how many streams are read at once. DefaultConcurrency when < 1.
	Concurrency int
	// Now is the clock, time.Now when nil.
	Now func() time.Time
	// Progress, if not nil, is called after each stream with how many streams were
	// read so far, never from two goroutines at once.
	Progress func(streams int)
	// Kinds are the kinds of deadline whose rows the audit reads and checks against
	// their events: the index's (the service's under the default policy when
	// empty).
	Kinds deadlines.Kinds
}

// Run audits the service's tables through events and the Deadlines table's index.
// It first reads the index, every outstanding row of each kind with a query per
// shard of the kind's partitions (Index.Rows: never a scan, and no settled
// marker), then lists the streams of the Events table and reads them,
// Options.Concurrency at a time, keeping the set of stream ids and a small summary
// per rental and per outstanding row, never a whole stream or table. Reading the
// Deadlines table first means that what changes during the audit can only make a
// payment look newer than the table, which the grace period covers when the
// system is not quiet.
//
// Records that cannot be decoded are reported as corrupt-record violations and the
// audit goes on. A read failure or a cancelled ctx stops it: Run then returns the
// error and an empty Report. Run only reads, so it is safe to run at any time and
// any number of times; its quiet-only checks are meaningful only when the system is
// quiet.
func Run(ctx context.Context, events EventsSource, index deadlines.Index, opts Options) (Report, error) {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Concurrency < 1 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Kinds.Len() == 0 {
		opts.Kinds = deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{})
	}
	a := &auditor{opts: opts, rentals: make(map[string]*rentalSummary), rows: make(map[string]row), open: make(map[string]row), owed: make(map[string]row),
		kinds: kindsOf(opts.Kinds), kindRows: map[deadlineKey]row{}, kindStates: map[deadlineKey]*deadlineState{}}

	start := opts.Now()
	if err := a.readRows(ctx, index); err != nil {
		return Report{}, fmt.Errorf("audit: read the Deadlines table's rows: %w", err)
	}
	if err := a.readEvents(ctx, events); err != nil {
		return Report{}, err
	}
	a.crossCheck(start.Add(-opts.Grace))
	a.checkKinds(start.Add(-opts.Grace))
	return a.report(), nil
}

// row is an outstanding row of the Deadlines table, with when it opened: its due
// time less its kind's After.
type row struct {
	deadlines.Row
	opened time.Time
}

// readRows reads every outstanding row of every kind of the audit, each kind's
// shards one after the other, and files it by its kind: the payments due, the
// processes stuck and the owed cancellations under the invariants of their own,
// the other kinds' rows for checkKinds.
func (a *auditor) readRows(ctx context.Context, index deadlines.Index) error {
	for _, k := range a.opts.Kinds.All() {
		for shard := range index.Shards() {
			_, err := index.Rows(ctx, deadlines.Span{Kind: k, Shard: shard}, func(page []deadlines.Row) bool {
				for _, r := range page {
					a.file(k, row{Row: r, opened: r.Due.Add(-k.After)})
				}
				return true
			})
			if err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// file files r, a row of kind k.
func (a *auditor) file(k deadlines.Kind, r row) {
	a.deadlineRows++
	switch k.Name {
	case deadlinekinds.Payment:
		a.rows[k.Key(r.Subject)] = r // a payment's reference
	case deadlinekinds.Stuck:
		a.open[r.Subject] = r // a rental's open process
	case deadlinekinds.Cancellation:
		a.owed[r.Subject] = r // a payment's reference
	default:
		if k.Name == deadlinekinds.Redelivery {
			a.parked++ // a stream record waiting for its redelivery: expected work
		}
		a.kindRows[deadlineKey{k.Name, k.Key(r.Subject), r.Subject}] = r
	}
}

// auditor holds what an audit has gathered so far.
type auditor struct {
	opts Options

	mu           sync.Mutex // guards everything below while streams are read
	streams      int
	records      int
	payments     int
	deadlineRows int
	parked       int
	refundsOwed  int
	rentals      map[string]*rentalSummary
	rows         map[string]row // outstanding payment-due rows by payment reference
	open         map[string]row // process-stuck rows by rental id
	owed         map[string]row // owed-cancellation rows by payment reference
	violations   []Violation

	kinds      []deadlines.Kind // the kinds checked generically (deadlines.go)
	kindRows   map[deadlineKey]row
	kindStates map[deadlineKey]*deadlineState
}

// rentalSummary is what the audit remembers of one rental, from its three streams.
type rentalSummary struct {
	// From the bike's stream.
	bikeStream    string
	bikeRequested bool
	requestedAt   time.Time
	bikeOutcome   rental.Outcome

	// From the process's stream.
	processStream string
	started       int
	completed     int
	completedAt   time.Time
	outcome       rentalpayment.Completion

	// From the payment's stream.
	paymentStream string
	prepared      bool
	preparedAt    time.Time
	settlements   int
	settlement    string // the type of the first settling event
	settledAt     time.Time
	lateSuccessAt time.Time // zero unless the money arrived after the payment was given up on
	refunded      bool      // a refund was requested, confirmed or recorded as owed
	// cancellationOwedAt is when a cancellation became owed to the provider (zero
	// if none did), cancellationMadeAt when the provider confirmed it.
	cancellationOwedAt time.Time
	cancellationMadeAt time.Time

	// From the receipt streams of provider events that did not match the payment:
	// those that reported money taken elsewhere with no refund recorded, by stream,
	// and those whose refund is owed (MismatchRefundOwed), by provider payment.
	unrefundedMismatches map[string]time.Time
	mismatchesOwed       map[string]mismatchOwed
	// unexpectedOwed are the provider payments, other than the one recorded, on
	// which the payment's stream records a refund owed (UnexpectedRefundOwed).
	unexpectedOwed []string
}

// mismatchOwed is a receipt stream's MismatchRefundOwed: where, and since when.
type mismatchOwed struct {
	stream string
	at     time.Time
}

// owesCancellation reports whether the payment still owes the provider its
// cancellation, as payment.Payment.CancellationDue has it.
func (r *rentalSummary) owesCancellation() bool {
	return !r.cancellationOwedAt.IsZero() && r.cancellationMadeAt.IsZero() && r.lateSuccessAt.IsZero()
}

func (a *auditor) rental(id string) *rentalSummary {
	s, ok := a.rentals[id]
	if !ok {
		s = &rentalSummary{}
		a.rentals[id] = s
	}
	return s
}

func (a *auditor) violate(invariant, detail string, streams ...string) {
	streams = slices.DeleteFunc(slices.Clone(streams), func(s string) bool { return s == "" })
	slices.Sort(streams)
	a.violations = append(a.violations, Violation{Invariant: invariant, Streams: slices.Compact(streams), Detail: detail})
}

// readEvents lists the streams and reads each one, Concurrency at a time.
func (a *auditor) readEvents(ctx context.Context, events EventsSource) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.opts.Concurrency)
	var seenMu sync.Mutex
	seen := make(map[string]struct{})
	listErr := events.StreamIDs(gctx, func(id string) error {
		seenMu.Lock()
		_, dup := seen[id]
		seen[id] = struct{}{}
		seenMu.Unlock()
		if dup {
			return nil
		}
		if gctx.Err() != nil {
			return context.Cause(gctx)
		}
		g.Go(func() error { return a.readStream(gctx, events, id) }) // waits for a free worker
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	if listErr != nil {
		return fmt.Errorf("audit: list streams: %w", listErr)
	}
	return ctx.Err()
}

// streamCheck is what reading one stream found, before it is merged.
type streamCheck struct {
	id         string
	records    int
	versions   versionCheck
	violations []Violation
	merge      func(a *auditor) // adds the stream's summary to the auditor's
}

func (c *streamCheck) violate(invariant, detail string, streams ...string) {
	if len(streams) == 0 {
		streams = []string{c.id}
	}
	streams = slices.Clone(streams)
	slices.Sort(streams)
	c.violations = append(c.violations, Violation{Invariant: invariant, Streams: streams, Detail: detail})
}

// readStream reads one stream, checks what can be checked within it and merges its
// summary into the auditor's.
func (a *auditor) readStream(ctx context.Context, events EventsSource, id string) error {
	c := &streamCheck{id: id}
	states := map[deadlineKey]*deadlineState{}
	var apply func(r eventstore.Record) error
	var finish func()
	switch {
	case strings.HasPrefix(id, "rentalpayment-"):
		apply, finish = c.process(strings.TrimPrefix(id, "rentalpayment-"))
	case strings.HasPrefix(id, "payment-"):
		apply, finish = c.payment(strings.TrimPrefix(id, "payment-"))
	case strings.HasPrefix(id, "bike-"):
		apply, finish = c.bike()
	case strings.HasPrefix(id, "providerevent"):
		apply, finish = c.receipt()
	default: // a stream the audit knows nothing about: its versions are still checked
		apply, finish = func(eventstore.Record) error { return nil }, func() {}
	}
	err := events.ReadStream(ctx, id, func(it Item) error {
		c.records++
		if it.Version < 1 {
			c.violate(CorruptRecord, fmt.Sprintf("an item with an unreadable version: %v", it.Err))
			return nil
		}
		c.versions.add(it.Version)
		if it.Err != nil {
			c.violate(CorruptRecord, fmt.Sprintf("version %d: %v", it.Version, it.Err))
			return nil
		}
		if err := apply(it.Record); err != nil {
			c.violate(CorruptRecord, fmt.Sprintf("version %d (%s): %v", it.Version, it.Record.Type, err))
		} else if err := observeKinds(a.kinds, states, id, it.Record); err != nil {
			c.violate(CorruptRecord, fmt.Sprintf("version %d (%s): %v", it.Version, it.Record.Type, err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: read stream %s: %w", id, err)
	}
	finish()
	if d := c.versions.problems(); d != "" {
		c.violate(VersionGap, d)
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	a.streams++
	a.records += c.records
	a.violations = append(a.violations, c.violations...)
	if c.merge != nil {
		c.merge(a)
	}
	a.mergeKinds(states)
	if a.opts.Progress != nil {
		a.opts.Progress(a.streams)
	}
	return nil
}

// versionCheck follows a stream's versions as they are read, in ascending order.
type versionCheck struct {
	last  int64
	found []string
	more  int // problems beyond the ones kept
}

const maxVersionProblems = 10

func (v *versionCheck) note(p string) {
	if len(v.found) < maxVersionProblems {
		v.found = append(v.found, p)
	} else {
		v.more++
	}
}

func (v *versionCheck) add(version int64) {
	switch want := v.last + 1; {
	case version == v.last:
		v.note(fmt.Sprintf("duplicate version %d", version))
	case version < v.last:
		v.note(fmt.Sprintf("version %d out of order after %d", version, v.last))
		return
	case version == want+1:
		v.note(fmt.Sprintf("missing version %d", want))
	case version > want:
		v.note(fmt.Sprintf("missing versions %d to %d", want, version-1))
	}
	v.last = version
}

func (v *versionCheck) problems() string {
	if len(v.found) == 0 {
		return ""
	}
	s := strings.Join(v.found, ", ")
	if v.more > 0 {
		s += fmt.Sprintf(" and %d more", v.more)
	}
	return s
}

// bike replays a bike's stream as rental.Evolve does, without keeping every state.
func (c *streamCheck) bike() (func(eventstore.Record) error, func()) {
	type seen struct {
		requested   bool
		requestedAt time.Time
		outcome     rental.Outcome
	}
	rentals := make(map[string]*seen)
	of := func(id string) *seen {
		s, ok := rentals[id]
		if !ok {
			s = &seen{}
			rentals[id] = s
		}
		return s
	}
	active := "" // the rental that is requested or rented
	apply := func(r eventstore.Record) error {
		e, err := rental.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return err
		}
		switch e := e.(type) {
		case rental.BikeRequested:
			if active != "" && active != e.RentalID {
				c.violate(BikeDoubleBooked, fmt.Sprintf("version %d requests the bike for rental %s while rental %s holds it", r.Version, e.RentalID, active))
			}
			active = e.RentalID
			s := of(e.RentalID)
			s.requested, s.requestedAt, s.outcome = true, r.RecordedAt, rental.OutcomeRequested
		case rental.RequestApproved:
			of(e.RentalID).outcome = rental.OutcomeApproved
		case rental.RequestRejected:
			of(e.RentalID).outcome = rental.OutcomeRejected
			if active == e.RentalID {
				active = ""
			}
		case rental.BikeReturned:
			of(e.RentalID).outcome = rental.OutcomeReturned
			if active == e.RentalID {
				active = ""
			}
		}
		return nil
	}
	finish := func() {
		c.merge = func(a *auditor) {
			for id, s := range rentals {
				r := a.rental(id)
				r.bikeStream = c.id
				r.bikeRequested = r.bikeRequested || s.requested
				r.requestedAt = s.requestedAt
				r.bikeOutcome = s.outcome
			}
		}
	}
	return apply, finish
}

// process reads a rental-payment process's stream.
func (c *streamCheck) process(rentalID string) (func(eventstore.Record) error, func()) {
	var started, completed int
	var outcome rentalpayment.Completion
	var completedAt time.Time
	apply := func(r eventstore.Record) error {
		e, err := rentalpayment.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return err
		}
		switch e := e.(type) {
		case rentalpayment.RentalPaymentRequested:
			started++
		case rentalpayment.RentalPaymentProcessCompleted:
			if completed == 0 {
				outcome, completedAt = e.Outcome, r.RecordedAt
			}
			completed++
		}
		return nil
	}
	finish := func() {
		if started > 1 {
			c.violate(ProcessStartedTwice, fmt.Sprintf("%d RentalPaymentRequested for rental %s", started, rentalID))
		}
		if completed > 1 {
			c.violate(ProcessCompletedTwice, fmt.Sprintf("%d RentalPaymentProcessCompleted for rental %s", completed, rentalID))
		}
		c.merge = func(a *auditor) {
			r := a.rental(rentalID)
			r.processStream = c.id
			r.started, r.completed, r.outcome, r.completedAt = started, completed, outcome, completedAt
		}
	}
	return apply, finish
}

// payment reads a payment's stream.
func (c *streamCheck) payment(reference string) (func(eventstore.Record) error, func()) {
	var (
		prepared      bool
		preparedAt    time.Time
		settlements   []string
		settledAt     time.Time
		lateSuccessAt time.Time
		refunded      bool
		owedAt        time.Time
		madeAt        time.Time
		refunds       refundChecks
	)
	apply := func(r eventstore.Record) error {
		e, err := payment.DecodeEvent(r.Type, r.Data)
		if err != nil {
			return err
		}
		switch e.(type) {
		case payment.PaymentPrepared:
			if !prepared {
				prepared, preparedAt = true, r.RecordedAt
			}
		case payment.PaymentConfirmed, payment.PaymentRejected, payment.PaymentCancelled:
			if len(settlements) == 0 {
				settledAt = r.RecordedAt
			}
			settlements = append(settlements, fmt.Sprintf("%s at version %d", r.Type, r.Version))
		case payment.PaymentSucceededAfterCancellation:
			if lateSuccessAt.IsZero() {
				lateSuccessAt = r.RecordedAt
			}
			refunds.observe(r, e)
		case payment.RefundRequested, payment.PaymentRefunded, payment.RefundMadeByHand, payment.RefundOwed:
			refunded = true // or owed: the money of the late success is seen to
			refunds.observe(r, e)
		case payment.UnexpectedRefundOwed, payment.UnexpectedRefundMadeByHand:
			refunds.observeUnexpected(r, e)
		case payment.CancellationOwedAtProvider:
			if owedAt.IsZero() {
				owedAt = r.RecordedAt
			}
		case payment.CancellationDoneAtProvider:
			if madeAt.IsZero() {
				madeAt = r.RecordedAt
			}
		}
		return nil
	}
	finish := func() {
		if len(settlements) > 1 {
			c.violate(PaymentSettledTwice, fmt.Sprintf("settled %d times: %s", len(settlements), strings.Join(settlements, ", ")))
		}
		for _, problem := range refunds.problems {
			c.violate(RefundByHandUnfounded, problem)
		}
		for _, problem := range refunds.kept {
			c.violate(MoneyKept, problem)
		}
		rentalID, err := payment.RentalIDFor(reference)
		c.merge = func(a *auditor) {
			a.payments++
			if err != nil {
				return // not a rental's payment: neither the process nor the projection concerns it
			}
			a.refundsOwed += refunds.owedNow()
			r := a.rental(rentalID)
			r.paymentStream = c.id
			r.unexpectedOwed = refunds.unexpectedOwed()
			r.prepared, r.preparedAt = prepared, preparedAt
			r.settlements, r.settledAt = len(settlements), settledAt
			r.lateSuccessAt, r.refunded = lateSuccessAt, refunded
			r.cancellationOwedAt, r.cancellationMadeAt = owedAt, madeAt
			if len(settlements) > 0 {
				r.settlement, _, _ = strings.Cut(settlements[0], " ")
			}
		}
	}
	return apply, finish
}

// receipt follows a provider event's receipt stream: a ProviderEventMismatched that
// reported money taken on another provider payment must be followed by its refund
// or its being owed; a refund owed (MismatchRefundOwed) must be recorded on the
// payment too (crossCheck), where the refunds owed are listed and settled.
func (c *streamCheck) receipt() (func(eventstore.Record) error, func()) {
	var (
		due      bool
		dueAt    time.Time
		rentalID string
		settled  bool
		owed     *command.MismatchRefundOwed
		owedAt   time.Time
	)
	apply := func(r eventstore.Record) error {
		switch r.Type {
		case command.ProviderEventMismatched{}.EventType():
			m, err := eventstore.Decode[command.ProviderEventMismatched](r, command.DecodeEvent)
			if err != nil {
				return err
			}
			id, err := payment.RentalIDFor(m.Reference)
			if err != nil {
				return err
			}
			due, dueAt, rentalID = m.RefundDue, r.RecordedAt, id
		case command.MismatchRefundRequested{}.EventType():
			settled = true
		case command.MismatchRefundOwed{}.EventType():
			o, err := eventstore.Decode[command.MismatchRefundOwed](r, command.DecodeEvent)
			if err != nil {
				return err
			}
			settled, owed, owedAt = true, &o, r.RecordedAt
		}
		return nil
	}
	finish := func() {
		if !due {
			return
		}
		c.merge = func(a *auditor) {
			r := a.rental(rentalID)
			switch {
			case owed != nil:
				if r.mismatchesOwed == nil {
					r.mismatchesOwed = map[string]mismatchOwed{}
				}
				if m, seen := r.mismatchesOwed[owed.PaymentID]; !seen || owedAt.Before(m.at) {
					r.mismatchesOwed[owed.PaymentID] = mismatchOwed{stream: c.id, at: owedAt}
				}
			case !settled:
				if r.unrefundedMismatches == nil {
					r.unrefundedMismatches = map[string]time.Time{}
				}
				r.unrefundedMismatches[c.id] = dueAt
			}
		}
	}
	return apply, finish
}

// crossCheck checks what spans streams and tables, once everything was read.
// recent is the time from which, when not quiet, drift is forgiven.
func (a *auditor) crossCheck(recent time.Time) {
	for _, id := range slices.Sorted(maps.Keys(a.rentals)) {
		r, s := a.rentals[id], streamsOf(id, a.rentals[id])
		a.checkProcess(id, r, s)
		a.checkMoneyKept(id, r, s, recent)
		a.checkRentalRows(id, r, s, recent)
	}
	a.checkOwedRows(recent)
	a.checkOutstandingRows(recent)
}

// rentalStreams names the streams of one rental.
type rentalStreams struct{ bike, process, payment string }

// streamsOf names the streams of rental id: its bike's is the one read, else the
// one its id names.
func streamsOf(id string, r *rentalSummary) rentalStreams {
	s := rentalStreams{bike: r.bikeStream, process: rentalpayment.StreamID(id), payment: payment.StreamID(payment.ReferenceFor(id))}
	if s.bike == "" {
		if bikeID, err := rental.BikeIDOf(id); err == nil {
			s.bike = rental.StreamID(bikeID)
		}
	}
	return s
}

// checkProcess checks a rental's process against its bike and its payment: that
// it started, completed once its payment settled, with the settlement's outcome,
// and that the bike was told.
func (a *auditor) checkProcess(id string, r *rentalSummary, s rentalStreams) {
	quiet := a.opts.Quiet
	if quiet && r.bikeRequested && r.started == 0 {
		a.violate(ProcessNotStarted, fmt.Sprintf("rental %s was requested on its bike but its process never recorded RentalPaymentRequested", id), s.bike, s.process)
		a.stuck(id)
	}
	if quiet && r.started > 0 && r.completed == 0 && r.settlements > 0 {
		a.violate(ProcessNotCompleted, fmt.Sprintf("the payment of rental %s settled (%s) but its process never recorded its completion", id, r.settlement), s.process, s.payment)
		a.stuck(id)
	}
	if r.completed == 0 {
		return
	}
	switch want, settled := rentalpayment.CompletionFor(r.settlement); {
	case settled && want != r.outcome:
		a.violate(ProcessOutcomeMismatch, fmt.Sprintf("rental %s completed %q but its payment settled with %s, which means %q", id, r.outcome, r.settlement, want), s.process, s.payment)
	case !settled && quiet:
		a.violate(ProcessOutcomeMismatch, fmt.Sprintf("rental %s completed %q but its payment has not settled", id, r.outcome), s.process, s.payment)
	}
	if quiet {
		a.checkBikeTold(id, r, s.bike, s.process)
	}
}

// checkMoneyKept checks that money the provider took when it should not have, late
// or on another provider payment, is refunded or owed.
func (a *auditor) checkMoneyKept(id string, r *rentalSummary, s rentalStreams, recent time.Time) {
	quiet := a.opts.Quiet
	if !r.lateSuccessAt.IsZero() && !r.refunded && (quiet || r.lateSuccessAt.Before(recent)) {
		a.violate(MoneyKept, fmt.Sprintf("the provider took the money of rental %s at %s, after its payment was %s, and no refund or refund owed is recorded", id, r.lateSuccessAt.Format(time.RFC3339), r.settlement), s.payment)
	}
	for _, stream := range slices.Sorted(maps.Keys(r.unrefundedMismatches)) {
		if at := r.unrefundedMismatches[stream]; quiet || at.Before(recent) {
			a.violate(MoneyKept, fmt.Sprintf("a provider event of %s reported money taken for rental %s on a provider payment that is not the one recorded, and no refund or refund owed is recorded", at.Format(time.RFC3339), id), stream)
		}
	}
	for _, paymentID := range slices.Sorted(maps.Keys(r.mismatchesOwed)) {
		m := r.mismatchesOwed[paymentID]
		if !slices.Contains(r.unexpectedOwed, paymentID) && (quiet || m.at.Before(recent)) {
			a.violate(MoneyKept, fmt.Sprintf("the refund of money provider payment %q took for rental %s is owed since %s (MismatchRefundOwed), but the payment records no refund owed on it (UnexpectedRefundOwed): no list shows it, and nobody pays it back; deliver it to the process again: rentalctl repair --stream %s", paymentID, id, m.at.Format(time.RFC3339), m.stream), m.stream, s.payment)
		}
	}
}

// checkRentalRows checks that the Deadlines table holds the rows a rental's state
// calls for: its open process, its owed cancellation, its outstanding payment.
func (a *auditor) checkRentalRows(id string, r *rentalSummary, s rentalStreams, recent time.Time) {
	quiet := a.opts.Quiet
	reference := payment.ReferenceFor(id)
	if _, ok := a.open[id]; !ok && r.bikeRequested && r.completed == 0 && (quiet || r.requestedAt.Before(recent)) {
		a.violate(OpenMissing, fmt.Sprintf("rental %s was requested at %s and its process has not completed, but the Deadlines table has no open-process row for it: the sweep would not notice if it stayed stuck", id, r.requestedAt.Format(time.RFC3339)), s.bike)
		a.stuck(id)
	}
	if _, ok := a.open[id]; ok && r.completed > 0 && (quiet || r.completedAt.Before(recent)) {
		a.violate(OpenStale, fmt.Sprintf("the Deadlines table holds the process of rental %s as open, but it completed (%s) at %s", id, r.outcome, r.completedAt.Format(time.RFC3339)), s.process)
		a.stuck(id)
	}
	if _, ok := a.owed[reference]; !ok && r.owesCancellation() && (quiet || r.cancellationOwedAt.Before(recent)) {
		a.violate(OwedMissing, fmt.Sprintf("the cancellation of payment %s is owed to the provider since %s, but the Deadlines table has no owed-cancellation row for it: the sweep would never make it", reference, r.cancellationOwedAt.Format(time.RFC3339)), s.payment)
		a.stuck(id)
	}
	if r.prepared && r.settlements == 0 {
		if _, ok := a.rows[reference]; !ok && (quiet || r.preparedAt.Before(recent)) {
			a.violate(DeadlineMissing, fmt.Sprintf("payment %s is outstanding (prepared %s) but the Deadlines table has no outstanding payment row for it: the sweep would never give up on it", reference, r.preparedAt.Format(time.RFC3339)), s.payment)
			a.stuck(id)
		}
	}
}

// checkOutstandingRows reports the outstanding payment rows of payments that were
// never prepared or have settled.
func (a *auditor) checkOutstandingRows(recent time.Time) {
	quiet := a.opts.Quiet
	for _, ref := range slices.Sorted(maps.Keys(a.rows)) {
		row := a.rows[ref]
		stream := payment.StreamID(ref)
		var r *rentalSummary
		if id, err := payment.RentalIDFor(ref); err == nil {
			r = a.rentals[id]
		}
		switch {
		case r == nil || !r.prepared:
			if quiet || row.opened.Before(recent) {
				a.violate(DeadlineStale, fmt.Sprintf("the Deadlines table has an outstanding payment row for %s, a payment that was never prepared", ref), stream)
			}
		case r.settlements > 0:
			if quiet || r.settledAt.Before(recent) {
				a.violate(DeadlineStale, fmt.Sprintf("the Deadlines table has an outstanding payment row for %s, which settled with %s at %s", ref, r.settlement, r.settledAt.Format(time.RFC3339)), stream)
			}
		}
	}
}

// checkOwedRows reports the owed-cancellation rows of payments that owe the
// provider nothing.
func (a *auditor) checkOwedRows(recent time.Time) {
	refs := make([]string, 0, len(a.owed))
	for ref := range a.owed {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	for _, ref := range refs {
		row := a.owed[ref]
		var r *rentalSummary
		id, err := payment.RentalIDFor(ref)
		if err == nil {
			r = a.rentals[id]
		}
		switch {
		case r == nil || r.cancellationOwedAt.IsZero():
			if a.opts.Quiet || row.opened.Before(recent) {
				a.violate(OwedStale, fmt.Sprintf("the Deadlines table owes the provider the cancellation of %s, which was never owed", ref), payment.StreamID(ref))
				if r != nil {
					a.stuck(id)
				}
			}
		case !r.owesCancellation():
			settled := r.cancellationMadeAt
			if settled.IsZero() || (!r.lateSuccessAt.IsZero() && r.lateSuccessAt.Before(settled)) {
				settled = r.lateSuccessAt
			}
			if a.opts.Quiet || settled.Before(recent) {
				a.violate(OwedStale, fmt.Sprintf("the Deadlines table owes the provider the cancellation of %s, which owes nothing since %s", ref, settled.Format(time.RFC3339)), payment.StreamID(ref))
				a.stuck(id)
			}
		}
	}
}

// checkBikeTold checks that a completed process's bike shows how the rental ended.
func (a *auditor) checkBikeTold(id string, r *rentalSummary, bikeStream, processStream string) {
	var told bool
	var want string
	switch r.outcome {
	case rentalpayment.CompletedApproved:
		told, want = r.bikeOutcome == rental.OutcomeApproved || r.bikeOutcome == rental.OutcomeReturned, rental.RequestApproved{}.EventType()
	case rentalpayment.CompletedRejected, rentalpayment.CompletedCancelled:
		told, want = r.bikeOutcome == rental.OutcomeRejected, rental.RequestRejected{}.EventType()
	default:
		return // an outcome the process never writes: nothing to compare with
	}
	if told {
		return
	}
	got := "no event about the rental"
	if r.bikeOutcome != "" {
		got = "the rental " + string(r.bikeOutcome)
	}
	a.violate(BikeNotTold, fmt.Sprintf("rental %s completed %q, so its bike should show %s, but it shows %s", id, r.outcome, want, got), bikeStream, processStream)
	a.stuck(id)
}

func (a *auditor) report() Report {
	v := a.violations
	if v == nil {
		v = []Violation{}
	}
	slices.SortFunc(v, func(x, y Violation) int {
		return cmp.Or(
			cmp.Compare(x.Invariant, y.Invariant),
			slices.Compare(x.Streams, y.Streams),
			cmp.Compare(x.Detail, y.Detail),
		)
	})
	return Report{
		Quiet:        a.opts.Quiet,
		Streams:      a.streams,
		Records:      a.records,
		Rentals:      len(a.rentals),
		Payments:     a.payments,
		DeadlineRows: a.deadlineRows,
		Parked:       a.parked,
		RefundsOwed:  a.refundsOwed,
		Violations:   v,
	}
}

// refundChecks follows what a payment stream says of the money taken after the
// payment was given up on and of its refunds owed, to find a refund owed for
// another amount or currency than the late success took (kept: the service owes
// what the provider took, payment.Payment.Charge), a refund made by hand that the
// service would have refused (problems), and to count those still owed.
type refundChecks struct {
	taken    *payment.PaymentSucceededAfterCancellation
	owed     *payment.RefundOwed
	settled  string // the first event that settled the refund owed, with its version
	byHand   bool   // and whether it was a RefundMadeByHand
	problems []string
	kept     []string
	// unexpected are the refunds owed on other provider payments, by provider
	// payment, as UnexpectedRefundOwed opened them.
	unexpected map[string]*unexpectedRefund
}

// unexpectedRefund is what a payment stream says of the refund owed on one other
// provider payment.
type unexpectedRefund struct {
	owed    payment.UnexpectedRefundOwed
	settled string // the first UnexpectedRefundMadeByHand, with its version
}

// observeUnexpected notes r, an UnexpectedRefundOwed or UnexpectedRefundMadeByHand.
func (b *refundChecks) observeUnexpected(r eventstore.Record, e payment.Event) {
	if b.unexpected == nil {
		b.unexpected = map[string]*unexpectedRefund{}
	}
	switch e := e.(type) {
	case payment.UnexpectedRefundOwed:
		if _, ok := b.unexpected[e.PaymentID]; !ok {
			b.unexpected[e.PaymentID] = &unexpectedRefund{owed: e}
		}
	case payment.UnexpectedRefundMadeByHand:
		u, ok := b.unexpected[e.PaymentID]
		switch {
		case !ok:
			b.problems = append(b.problems, fmt.Sprintf("UnexpectedRefundMadeByHand at version %d (%d %s on provider payment %q, reference %q, by %q) where nothing was owed on that payment",
				r.Version, e.Amount, e.Currency, e.PaymentID, e.OperatorReference, e.RecordedBy))
			return
		case u.settled != "":
			b.problems = append(b.problems, fmt.Sprintf("UnexpectedRefundMadeByHand at version %d on provider payment %q after %s: the refund was recorded twice", r.Version, e.PaymentID, u.settled))
		case (u.owed.Amount != 0 && e.Amount != u.owed.Amount) || (u.owed.Currency != "" && e.Currency != u.owed.Currency):
			b.problems = append(b.problems, fmt.Sprintf("UnexpectedRefundMadeByHand at version %d for %d %s on provider payment %q where %d %s was owed",
				r.Version, e.Amount, e.Currency, e.PaymentID, u.owed.Amount, u.owed.Currency))
		}
		if u.settled == "" {
			u.settled = fmt.Sprintf("%s at version %d", r.Type, r.Version)
		}
	}
}

// owedNow counts the refunds owed that nothing has settled: the payment's own,
// and each on another provider payment.
func (b *refundChecks) owedNow() int {
	n := 0
	if b.owed != nil && b.settled == "" {
		n++
	}
	for _, u := range b.unexpected {
		if u.settled == "" {
			n++
		}
	}
	return n
}

// unexpectedOwed returns the provider payments on which a refund is owed or was,
// sorted.
func (b *refundChecks) unexpectedOwed() []string {
	return slices.Sorted(maps.Keys(b.unexpected))
}

// observe notes r, an event e of the refund's (the late success, RefundOwed or an
// event that settles a refund, payment.SettlesRefund; others are ignored).
func (b *refundChecks) observe(r eventstore.Record, e payment.Event) {
	switch e := e.(type) {
	case payment.PaymentSucceededAfterCancellation:
		if b.taken == nil {
			b.taken = &e
		}
		return
	case payment.RefundOwed:
		if b.taken != nil && (e.Amount != b.taken.Amount || e.Currency != b.taken.Currency) {
			b.kept = append(b.kept, fmt.Sprintf("RefundOwed at version %d for %d %s where the provider took %d %s",
				r.Version, e.Amount, e.Currency, b.taken.Amount, b.taken.Currency))
		}
		if e.FailedRefundID != "" { // the refund the provider reported made failed: owed anew
			b.owed, b.settled, b.byHand = &e, "", false
		}
		if b.owed == nil {
			b.owed = &e
		}
		return
	case payment.RefundMadeByHand:
		switch {
		case b.owed == nil:
			b.problems = append(b.problems, fmt.Sprintf("RefundMadeByHand at version %d (%d %s, reference %q, by %q) where no refund was owed",
				r.Version, e.Amount, e.Currency, e.OperatorReference, e.RecordedBy))
		case e.Amount != b.owed.Amount || e.Currency != b.owed.Currency:
			b.problems = append(b.problems, fmt.Sprintf("RefundMadeByHand at version %d for %d %s where %d %s was owed",
				r.Version, e.Amount, e.Currency, b.owed.Amount, b.owed.Currency))
		case b.settled != "":
			b.problems = append(b.problems, fmt.Sprintf("RefundMadeByHand at version %d after %s: the refund was recorded twice", r.Version, b.settled))
		}
	case payment.PaymentRefunded:
		if b.byHand {
			b.problems = append(b.problems, fmt.Sprintf("PaymentRefunded at version %d after %s: the refund was recorded twice", r.Version, b.settled))
		}
	default:
		return
	}
	if b.settled == "" {
		b.settled = fmt.Sprintf("%s at version %d", r.Type, r.Version)
		_, b.byHand = e.(payment.RefundMadeByHand)
	}
}
