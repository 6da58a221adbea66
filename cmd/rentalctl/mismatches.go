package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
)

const mismatchesUsage = `Usage: rentalctl mismatches [flags]

Lists, oldest first, the payment provider's authentic events that named one of the
service's payments but not the provider payment, amount or currency recorded for it
(say a Stripe PaymentIntent made by hand with our reference in its metadata). Each
was acknowledged and changed nothing; the ProviderEventMismatches alarm reports them
as they happen. REFUND says where money the event reported taken on another
provider payment stands: "requested" (refunded through the provider, on that
payment), "owed" (the provider cannot refund: pay it back by hand), "due" (not yet:
the provider's redelivery of the event retries it), "-" (no money reported taken).

It scans the Events table, filtered on the mismatch events, so it reads the whole
table; it only reads, and is safe to run at any time. Needs dynamodb:Scan on the
Events table.
`

func runMismatches(ctx context.Context, c *cli, args []string) error {
	stack, asJSON, err := openListing(ctx, c, "mismatches", mismatchesUsage, eventsScan, args)
	if err != nil {
		return err
	}
	list, err := stack.Mismatches(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(list)
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RECEIVED\tPROVIDER\tEVENT\tKIND\tPAYMENT\tDIFFERS\tEVENT SAYS\tRECORDED\tREFUND")
	for _, m := range list.Mismatches {
		refund := m.Refund
		if refund == "" {
			refund = "-"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", timestamp(m.ReceivedAt), m.Provider, m.EventID, m.Kind, m.PaymentReference,
			strings.Join(m.Fields, ","), money(m.PaymentID, m.Amount, m.Currency), money(m.RecordedPaymentID, m.RecordedAmount, m.RecordedCurrency), refund)
	}
	w.Flush()
	fmt.Fprintf(c.stdout, "%d mismatched provider events\n", list.Count)
	return nil
}

// money is a provider payment id with its amount, "-" for what is not known.
func money(paymentID string, minor int64, currency string) string {
	if paymentID == "" {
		paymentID = "-"
	}
	if minor == 0 && currency == "" {
		return paymentID
	}
	return paymentID + " " + formatAmount(minor, currency)
}
