// Package paymenttest builds payment records for tests of the packages that consume
// payment events from the Events table's stream.
package paymenttest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Record builds the record of a payment event as the event store holds it: on the
// payment's stream, at version, recorded at at.
func Record(tb testing.TB, e payment.Event, version int64, at time.Time) eventstore.Record {
	tb.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		tb.Fatal(err)
	}
	ref := payment.ReferenceOf(e)
	return eventstore.Record{StreamID: payment.StreamID(ref), Version: version, Event: eventstore.Event{
		ID: fmt.Sprintf("%s-%d", ref, version), Type: e.EventType(), Data: data, RecordedAt: at,
	}}
}
