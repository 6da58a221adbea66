package audit_test

import (
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/ops/audit"
)

// TestAParkedRecordIsExpectedWork: a stream record parked for the sweep to deliver
// again is counted, and is neither mistaken for a payment's outstanding row nor
// reported as a violation.
func TestAParkedRecordIsExpectedWork(t *testing.T) {
	f := &tables{}
	id := outstandingRental(f, "b1", t0.Add(-time.Hour))
	f.rows = []audit.PendingRow{
		{Reference: payment.ReferenceFor(id), Outstanding: true, PreparedAt: t0.Add(-time.Hour)},
		{Reference: rentalpayment.StreamID(id), Outstanding: true, PreparedAt: t0.Add(-time.Hour)},
		{Reference: deadlinetable.ParkedKey(eventfilter.Projector, rental.StreamID("b1"), 2), Outstanding: true, PreparedAt: t0.Add(-time.Hour)},
	}
	report := run(t, f, audit.Options{Quiet: true})
	if !report.OK() || report.Parked != 1 || report.PendingRows != 3 {
		t.Errorf("report %+v, want one parked record, no violation", report)
	}
}
