package ctl

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/ops/mismatch"
	"github.com/bikerental/bikerental/internal/ops/refund"
)

// RefundList is what refunds finds.
type RefundList struct {
	Refunds []refund.Owed `json:"refunds"`
	Count   int           `json:"count"`
}

// Refunds lists the refunds the service owes, oldest first, in a scan of the
// Events table; progress, if not nil, is called after each page with how many
// events were scanned so far. It only reads.
func (s *Stack) Refunds(ctx context.Context, progress func(scanned int)) (RefundList, error) {
	owed, err := refund.List(ctx, dynamodb.NewFromConfig(s.cfg), s.eventsTable(), progress)
	if err != nil {
		return RefundList{}, err
	}
	if owed == nil {
		owed = []refund.Owed{}
	}
	return RefundList{Refunds: owed, Count: len(owed)}, nil
}

// MismatchList is what mismatches finds.
type MismatchList struct {
	Mismatches []mismatch.Mismatch `json:"mismatches"`
	Count      int                 `json:"count"`
}

// Mismatches lists, oldest first, the provider's authentic events that did not
// match the payment recorded, in a scan of the Events table. It only reads.
func (s *Stack) Mismatches(ctx context.Context) (MismatchList, error) {
	list, err := mismatch.List(ctx, dynamodb.NewFromConfig(s.cfg), s.eventsTable())
	if err != nil {
		return MismatchList{}, err
	}
	return MismatchList{Mismatches: list, Count: len(list)}, nil
}
