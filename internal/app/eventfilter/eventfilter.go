// Package eventfilter says which event types wake each consumer of the Events
// table's stream: one table, from which the template's event source mapping filters
// are checked (through schema.StreamFilter) and the local stream pollers filter, so
// that AWS and local runs deliver the same records.
package eventfilter

import (
	"slices"
	"sort"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/domain/renter"
)

// The stream's consumers.
const (
	Process   = "process"
	Projector = "projector"
)

// wakes lists, for each consumer, the event types it acts on, sorted. A consumer is
// never woken for another type; the test of this package fails when an event type
// exists that no consumer has decided on.
var wakes = map[string][]string{
	// The rental-payment process starts on a request, ends on a settlement, and
	// sends back the money of a late success (and reports a refund owed, and a
	// provider event that did not match its payment, and a cancellation owed to the
	// provider). It records on the payment the refund owed of money another
	// provider payment took (MismatchRefundOwed), and reports it.
	Process: sorted(payment.SettlementTypes(),
		rental.BikeRequested{}.EventType(),
		payment.PaymentSucceededAfterCancellation{}.EventType(),
		payment.RefundOwed{}.EventType(),
		payment.UnexpectedRefundOwed{}.EventType(),
		payment.CancellationOwedAtProvider{}.EventType(),
		command.ProviderEventMismatched{}.EventType(),
		command.MismatchRefundOwed{}.EventType()),
	// The projector keeps the outstanding payments: a payment prepared adds one,
	// every settlement removes it (and, in precise mode, its one-time schedule). It
	// keeps the open processes too: a request opens one, the process's completion
	// closes it, so that the sweep notices a process that never ends. And it keeps
	// the cancellations owed to the provider: owed until the provider confirms one
	// or a success arrives meanwhile, so that the sweep makes them (a retry the
	// provider leaves unanswered, CancellationStillOwed, changes no row: the sweep
	// backs off from the row's own due time).
	// And the returns
	// due (deadlinekinds.ReturnKind): an approval opens one, the bike's return or
	// its being flagged overdue settles it. And the refunds owed
	// (deadlinekinds.RefundKind, payment.RefundOwedTypes), each until refunded by
	// the provider or made by hand, so that operators list them without a scan.
	// And the parked stream records (package parked), each until delivered again.
	Projector: sorted(slices.Concat(payment.SettlementTypes(), payment.RefundOwedTypes(), parked.Types()),
		rental.BikeRequested{}.EventType(),
		rental.RequestApproved{}.EventType(),
		rental.BikeReturned{}.EventType(),
		rental.ReturnOverdue{}.EventType(),
		payment.PaymentPrepared{}.EventType(),
		payment.PaymentSucceededAfterCancellation{}.EventType(),
		payment.CancellationOwedAtProvider{}.EventType(),
		payment.CancellationDoneAtProvider{}.EventType(),
		rentalpayment.TypeCompleted),
}

// sorted returns types and more, sorted, in a new slice.
func sorted(types []string, more ...string) []string {
	out := slices.Concat(types, more)
	slices.Sort(out)
	return out
}

// Consumers returns the consumers' names, sorted.
func Consumers() []string { return []string{Process, Projector} }

// Known reports whether consumer is one of the stream's consumers.
func Known(consumer string) bool { return slices.Contains(Consumers(), consumer) }

// Types returns the event types that wake consumer, sorted, in a new slice.
func Types(consumer string) []string { return slices.Clone(wakes[consumer]) }

// Wakes reports whether a record of eventType is delivered to consumer.
func Wakes(consumer, eventType string) bool {
	_, found := slices.BinarySearch(wakes[consumer], eventType)
	return found
}

// EventTypes returns every event type the service writes, from the packages that
// define them, sorted: what each consumer must have decided on.
func EventTypes() []string {
	types := slices.Concat(rental.EventTypes(), payment.EventTypes(), renter.EventTypes(), rentalpayment.EventTypes(),
		command.EventTypes(), parked.Types())
	sort.Strings(types)
	return types
}
