package payment

import "time"

// How the refund of a late success is decided: what the provider's words about
// refunds made and failed record, told apart by when it reported them.

// RefundReports are when the provider reported its refunds of a payment made and
// failed, by its own clock: what tells its word about a refund that failed from
// its word about another refund made since (refundNews).
type RefundReports struct {
	// Refunded is the latest time it reported the payment refunded
	// (PaymentRefunded.ReportedAt); zero when it never did, or did not say when.
	Refunded time.Time
	// Failed is when it reported the refund that failed (Payment.RefundFailed) as
	// failed (RefundOwed.FailedAt); zero for a failure recorded before the time was
	// kept.
	Failed time.Time
	// FailedAfterRefunded: it had reported the refund that failed made before it
	// failed. It decides for a failure whose time was not kept.
	FailedAfterRefunded bool
}

// decideRefund is decide for the commands about the refund of a late success: each
// records what it says when the refund stands where it applies, and nothing
// otherwise (every one is safe to send twice).
func decideRefund(s Payment, c Command) []Event {
	paid := s.Charge() // what was taken goes back, whatever the payment was prepared for
	switch c := c.(type) {
	case RecordRefund:
		if !s.RefundDue() {
			return nil
		}
		return []Event{RefundRequested{Reference: s.Reference, PaymentID: s.PaymentID, RefundID: c.RefundID, Amount: paid.Amount, Currency: paid.Currency}}

	case OweRefund:
		if !s.RefundDue() {
			return nil
		}
		return []Event{RefundOwed{Reference: s.Reference, PaymentID: s.PaymentID, Amount: paid.Amount, Currency: paid.Currency, Reason: c.Reason}}

	case RecordRefundFailed:
		ours := s.RefundID == "" || s.RefundID == c.RefundID // "": made outside the service, or before ids were kept
		if s.RefundFailed || (s.Refund != RefundStatusRequested && s.Refund != RefundStatusDone) || !ours {
			return nil
		}
		if !c.FailedAt.IsZero() && s.Reported.Refunded.After(c.FailedAt) {
			// A refund reported after the failure was made after it, and stands. One
			// reported in the same second (the provider's clock counts seconds) may
			// be the failed refund's own report: the failure stands, and the refund
			// is owed, for an operator to look at before paying it back.
			return nil
		}
		return []Event{RefundOwed{Reference: s.Reference, PaymentID: s.PaymentID, Amount: paid.Amount, Currency: paid.Currency, Reason: c.Reason,
			FailedRefundID: c.RefundID, FailedAt: c.FailedAt}}

	case ConfirmRefund:
		if !s.refundNews(c.ReportedAt) {
			return nil
		}
		return []Event{PaymentRefunded{Reference: s.Reference, PaymentID: s.PaymentID, ProviderEventID: c.ProviderEventID, ReportedAt: c.ReportedAt}}
	}
	return nil
}

// refundNews reports whether the provider's word, reported at `at` by its clock
// (zero: it did not say), that the payment was refunded is news. A provider
// refunds a payment in full once: while one refund stands it cannot make another,
// and each refund it makes it reports once (every delivery of that report is
// recognised by its receipt before it is decided on). So:
//   - after the failure of a refund (RefundFailed) the word is about another refund
//     made since when it was reported after the failure (in a later second: one in
//     the same second may be the failed refund's own report, and the refund stays
//     owed); and, for a failure
//     whose time was not kept, when the refund that failed had been reported made
//     before it failed. Otherwise it is the provider's word about the refund that
//     failed (its report delivered late, or after the failure), and nothing.
//   - while a refund stands (refunded, or refunded-twice) a report later than the
//     last one recorded is of another refund: the one recorded failed meanwhile,
//     and that failure, reported earlier than this word, changes nothing when it
//     comes (RecordRefundFailed). Without a time it is the same word again.
//   - otherwise (none asked, requested, owed, made by hand) it is news: after a
//     refund made by hand, the renter was paid back twice (refunded-twice).
func (s Payment) refundNews(at time.Time) bool {
	switch {
	case s.RefundFailed:
		if !s.Reported.Failed.IsZero() && !at.IsZero() {
			return at.After(s.Reported.Failed) // the same second may be the failed refund's own report
		}
		return s.Reported.FailedAfterRefunded
	case s.Refund == RefundStatusDone || s.Refund == RefundStatusTwice:
		return !at.IsZero() && at.After(s.Reported.Refunded)
	}
	return true
}
