package audit_test

import (
	"slices"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/ops/audit"
)

func invariants(r audit.Report) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Invariant)
	}
	return out
}

// TestOwedCancellationsAreAudited: a cancellation owed to the provider must have
// its row in the Deadlines table, which the sweep reads, for as long as it is owed,
// and no longer; an owed row is never mistaken for a payment's.
func TestOwedCancellationsAreAudited(t *testing.T) {
	at := t0.Add(-time.Hour)
	owedCase := func() (*tables, string) {
		f := &tables{}
		id := outstandingRental(f, "b1", at)
		ref := payment.ReferenceFor(id)
		f.add(payment.StreamID(ref), 2, at, payment.PaymentCancelled{Reference: ref, PaymentID: "p"}, "PaymentCancelled")
		f.add(payment.StreamID(ref), 3, at, payment.CancellationOwedAtProvider{Reference: ref, PaymentID: "p", Attempts: 3}, "CancellationOwedAtProvider")
		return f, ref
	}
	// owedRow projects the owed cancellation's row, and nothing else.
	owedRow := func(f *tables, ref string) { f.project(t, f.record(t, payment.StreamID(ref), 3)) }

	f, ref := owedCase()
	report := run(t, f, audit.Options{})
	if !slices.Contains(invariants(report), audit.OwedMissing) || slices.Contains(invariants(report), audit.OwedStale) {
		t.Errorf("an owed cancellation without its row: %v", report.Violations)
	}
	owedRow(f, ref)
	report = run(t, f, audit.Options{})
	if got := invariants(report); slices.Contains(got, audit.OwedMissing) || slices.Contains(got, audit.OwedStale) || slices.Contains(got, audit.DeadlineStale) {
		t.Errorf("an owed cancellation with its row: %v", report.Violations)
	}

	for name, settle := range map[string]func(f *tables, ref string){
		"made at the provider": func(f *tables, ref string) {
			f.add(payment.StreamID(ref), 4, at, payment.CancellationDoneAtProvider{Reference: ref, PaymentID: "p"}, "CancellationDoneAtProvider")
		},
		"overtaken by a success": func(f *tables, ref string) {
			f.add(payment.StreamID(ref), 4, at, payment.PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "p"}, "PaymentSucceededAfterCancellation")
			f.add(payment.StreamID(ref), 5, at, payment.RefundRequested{Reference: ref, PaymentID: "p", RefundID: "re_1"}, "RefundRequested")
		},
	} {
		f, ref := owedCase()
		settle(f, ref)
		owedRow(f, ref)
		report := run(t, f, audit.Options{})
		if got := invariants(report); !slices.Contains(got, audit.OwedStale) || slices.Contains(got, audit.OwedMissing) {
			t.Errorf("%s, its row still there: %v", name, report.Violations)
		}
		f.index = nil
		if got := invariants(run(t, f, audit.Options{})); slices.Contains(got, audit.OwedStale) || slices.Contains(got, audit.OwedMissing) {
			t.Errorf("%s, its row gone: %v", name, got)
		}
	}
}
