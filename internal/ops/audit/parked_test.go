package audit_test

import (
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/ops/audit"
)

// TestAParkedRecordIsExpectedWork: a stream record parked for the sweep to deliver
// again is counted, and is neither mistaken for a payment's outstanding row nor
// reported as a violation.
func TestAParkedRecordIsExpectedWork(t *testing.T) {
	f := &tables{}
	outstandingRental(f, "b1", t0.Add(-time.Hour))
	stream := parked.StreamOf(eventfilter.Projector, rental.StreamID("b1"))
	f.add(stream, 1, t0.Add(-time.Hour), parked.StreamRecordParked{Consumer: eventfilter.Projector, StreamID: rental.StreamID("b1"), Version: 2}, "StreamRecordParked")
	f.projectAll(t)
	report := run(t, f, audit.Options{Quiet: true})
	if !report.OK() || report.Parked != 1 || report.DeadlineRows != 3 {
		t.Errorf("report %+v, want one parked record among 3 rows, no violation", report)
	}
}

// TestAParkedRecordsRowIsAuditedAgainstItsParkingStream: a record its parking
// stream keeps parked must have its row, which the sweep redelivers, and a record
// redelivered must not; neither names a rental to repair (a parking stream is no
// rental's: a rebuild mends it).
func TestAParkedRecordsRowIsAuditedAgainstItsParkingStream(t *testing.T) {
	f := &tables{}
	outstandingRental(f, "b1", t0.Add(-time.Hour))
	bike := rental.StreamID("b1")
	stream := parked.StreamOf(eventfilter.Process, bike)
	at := t0.Add(-time.Hour)
	f.add(stream, 1, at, parked.StreamRecordParked{Consumer: eventfilter.Process, StreamID: bike, Version: 1}, "StreamRecordParked")
	f.add(stream, 2, at, parked.StreamRecordParked{Consumer: eventfilter.Process, StreamID: bike, Version: 2}, "StreamRecordParked")
	f.add(stream, 3, at, parked.StreamRecordRedelivered{Consumer: eventfilter.Process, StreamID: bike, Version: 1}, "StreamRecordRedelivered")
	f.projectAll(t)
	if report := run(t, f, audit.Options{}); !report.OK() || report.Parked != 1 {
		t.Fatalf("one record parked, one redelivered, both projected: %+v", report)
	}

	// The projector never saw version 2 parked, nor version 1 redelivered.
	f.index = nil
	for _, id := range []string{bike, paymentOf(rentalID("b1", "Fake")), processOf(rentalID("b1", "Fake"))} {
		for _, it := range f.streams[id] {
			f.project(t, it.Record)
		}
	}
	f.project(t, f.record(t, stream, 1))
	report := run(t, f, audit.Options{})
	want := []string{audit.DeadlineMissing, audit.DeadlineStale}
	if got := invariants(report); !slices.Equal(got, want) || report.Parked != 1 {
		t.Fatalf("violations %v (%d parked), want %v", report.Violations, report.Parked, want)
	}
	for _, v := range report.Violations {
		if v.Rental != "" {
			t.Errorf("%v names a rental to repair", v)
		}
	}
	if v := report.Violations[0]; !slices.Equal(v.Streams, []string{stream}) {
		t.Errorf("%v, want it to name the parking stream %s", v, stream)
	}
}
