package eventfilter_test

import (
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// decided is every event type there is, and for each consumer whether it is woken:
// adding an event type without deciding here fails the test below.
var decided = map[string]map[string]bool{
	// rental
	"BikeRegistered":  {eventfilter.Process: false, eventfilter.Projector: false},
	"BikeRequested":   {eventfilter.Process: true, eventfilter.Projector: true},
	"RequestApproved": {eventfilter.Process: false, eventfilter.Projector: true},
	"RequestRejected": {eventfilter.Process: false, eventfilter.Projector: false},
	"BikeReturned":    {eventfilter.Process: false, eventfilter.Projector: true},
	"ReturnOverdue":   {eventfilter.Process: false, eventfilter.Projector: true},
	// payment
	"PaymentPrepared":                   {eventfilter.Process: false, eventfilter.Projector: true},
	"PaymentConfirmed":                  {eventfilter.Process: true, eventfilter.Projector: true},
	"PaymentRejected":                   {eventfilter.Process: true, eventfilter.Projector: true},
	"PaymentCancelled":                  {eventfilter.Process: true, eventfilter.Projector: true},
	"PaymentSucceededAfterCancellation": {eventfilter.Process: true, eventfilter.Projector: true},
	"RefundRequested":                   {eventfilter.Process: false, eventfilter.Projector: false},
	"RefundOwed":                        {eventfilter.Process: true, eventfilter.Projector: true},
	"PaymentRefunded":                   {eventfilter.Process: false, eventfilter.Projector: true},
	"RefundMadeByHand":                  {eventfilter.Process: false, eventfilter.Projector: true},
	"CancellationOwedAtProvider":        {eventfilter.Process: true, eventfilter.Projector: true},
	"CancellationDoneAtProvider":        {eventfilter.Process: false, eventfilter.Projector: true},
	"CancellationStillOwed":             {eventfilter.Process: false, eventfilter.Projector: false},
	"UnexpectedRefundOwed":              {eventfilter.Process: true, eventfilter.Projector: true},
	"UnexpectedRefundMadeByHand":        {eventfilter.Process: false, eventfilter.Projector: true},
	// the process's own
	rentalpayment.TypeRequested: {eventfilter.Process: false, eventfilter.Projector: false},
	rentalpayment.TypeCompleted: {eventfilter.Process: false, eventfilter.Projector: true},
	// renters and provider events
	"RentalRequested":         {eventfilter.Process: false, eventfilter.Projector: false},
	"ProviderEventReceived":   {eventfilter.Process: false, eventfilter.Projector: false},
	"ProviderEventMismatched": {eventfilter.Process: true, eventfilter.Projector: false},
	"MismatchRefundRequested": {eventfilter.Process: false, eventfilter.Projector: false},
	"MismatchRefundOwed":      {eventfilter.Process: true, eventfilter.Projector: false},
	// the parking streams' (package parked): the redelivery kind's rows
	"StreamRecordParked":      {eventfilter.Process: false, eventfilter.Projector: true},
	"StreamRecordRedelivered": {eventfilter.Process: false, eventfilter.Projector: true},
}

func TestEveryEventTypeHasADecisionForEveryConsumer(t *testing.T) {
	for _, typ := range eventfilter.EventTypes() {
		d, ok := decided[typ]
		if !ok {
			t.Errorf("event type %s is new: decide, for each consumer, whether it is woken for it", typ)
			continue
		}
		for _, c := range eventfilter.Consumers() {
			want, ok := d[c]
			if !ok {
				t.Errorf("%s: no decision for the %s", typ, c)
			}
			if got := eventfilter.Wakes(c, typ); got != want {
				t.Errorf("the %s is woken for %s: %v, decided %v", c, typ, got, want)
			}
		}
	}
	for typ := range decided {
		if !slices.Contains(eventfilter.EventTypes(), typ) {
			t.Errorf("a decision for %s, which no package defines", typ)
		}
	}
	for _, c := range eventfilter.Consumers() {
		types := eventfilter.Types(c)
		if !slices.IsSorted(types) || len(types) == 0 {
			t.Errorf("%s's types %v are not sorted, or none", c, types)
		}
	}
}

func TestStreamFilter(t *testing.T) {
	got := schema.StreamFilter(eventfilter.Types(eventfilter.Projector))
	want := `{"dynamodb":{"NewImage":{"type":{"S":["BikeRequested","BikeReturned","CancellationDoneAtProvider","CancellationOwedAtProvider","PaymentCancelled","PaymentConfirmed","PaymentPrepared","PaymentRefunded","PaymentRejected","PaymentSucceededAfterCancellation","RefundMadeByHand","RefundOwed","RentalPaymentProcessCompleted","RequestApproved","ReturnOverdue","StreamRecordParked","StreamRecordRedelivered","UnexpectedRefundMadeByHand","UnexpectedRefundOwed"]}}}}`
	if got != want {
		t.Errorf("Pattern = %s, want %s", got, want)
	}
}
