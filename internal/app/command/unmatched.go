package command

import (
	"context"
	"fmt"
	"slices"

	"github.com/bikerental/bikerental/internal/domain/payment"
)

// giveUpUnmatched finishes a provider event that was recorded as a mismatch (res,
// on its first delivery or a later one): when it is a success the configured
// provider reports on the payment recorded for another amount or currency
// (payment.Took), the rental cannot have its bike for it, so the payment is given
// up and what the provider said it took is a late success for that amount and
// currency (payment.GiveUpUnmatchedSuccess: cancelled, if it was still prepared,
// which releases the bike), refunded on the payment (Refund), or owed, for that
// amount and currency, where the provider cannot refund. A payment confirmed
// already (its rental got its bike) changes nothing beyond the mismatch. Every
// step is safe to repeat, so a redelivery finishes what a first delivery cut
// short. It returns res with the payment afterwards.
func (h *Handler) giveUpUnmatched(ctx context.Context, ev payment.ProviderEvent, res ProviderResult, meta Meta) (ProviderResult, error) {
	// Another provider's word names no payment of the configured one: it is
	// shown, and decides nothing.
	if took, ok := payment.Took(res.Payment, ev); ok && !slices.Contains(res.Mismatch.Fields, "provider") {
		c := payment.GiveUpUnmatchedSuccess{Reference: ev.Reference, Amount: took.Amount, Currency: took.Currency}
		given, err := run(ctx, h, payments, payment.StreamID(ev.Reference), payment.Command(c), meta)
		if err != nil {
			return res, fmt.Errorf("command: give up payment %s, which the provider says took %s: %w", ev.Reference, took, err)
		}
		res.Payment = given.State
	}
	if !res.Payment.RefundDue() {
		return res, nil
	}
	refunded, err := h.Refund(ctx, ev.Reference, meta)
	if err != nil {
		return res, err
	}
	res.Payment = refunded
	return res, nil
}
