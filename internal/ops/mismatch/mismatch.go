// Package mismatch lists the payment provider's authentic events that named one of
// our payments but not the provider payment, amount or currency recorded for it
// (command.ProviderEventMismatched): they changed nothing, and operators look into
// each one (rentalctl mismatches); an alarm reports them as they happen.
package mismatch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Where the money a mismatched event reported taken stands (Mismatch.Refund).
const (
	RefundNone      = ""          // the event reported no money taken on another provider payment
	RefundDue       = "due"       // not refunded yet: the provider's redelivery retries it
	RefundRequested = "requested" // the provider accepted a refund on the payment that took it
	RefundOwed      = "owed"      // the provider cannot refund: someone must, by hand
)

// Mismatch is one mismatched provider event.
type Mismatch struct {
	Provider          string                    `json:"provider"`
	EventID           string                    `json:"eventId"`
	Kind              payment.ProviderEventKind `json:"kind"`
	PaymentReference  string                    `json:"paymentReference"`
	RentalID          string                    `json:"rentalId"`
	Fields            []string                  `json:"fields"`
	PaymentID         string                    `json:"paymentId,omitempty"`
	Amount            int64                     `json:"amount,omitempty"`
	Currency          string                    `json:"currency,omitempty"`
	RecordedPaymentID string                    `json:"recordedPaymentId"`
	RecordedAmount    int64                     `json:"recordedAmount"`
	RecordedCurrency  string                    `json:"recordedCurrency"`
	Refund            string                    `json:"refund,omitempty"`
	RefundID          string                    `json:"refundId,omitempty"`
	ReceivedAt        time.Time                 `json:"receivedAt"`
}

// Scanner is the part of the DynamoDB client List uses.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// List returns the mismatched provider events in the Events table, oldest first,
// each with where its refund stands. Mismatches are rare and this is an operator's
// tool, so it scans the table, filtered on the mismatch streams' event types
// (command.MismatchEventTypes); it needs dynamodb:Scan on the table, and only reads.
func List(ctx context.Context, db Scanner, table string) ([]Mismatch, error) {
	typeNames := command.MismatchEventTypes()
	values := map[string]types.AttributeValue{}
	var placeholders []string
	for i, typ := range typeNames {
		k := fmt.Sprintf(":t%d", i)
		values[k] = &types.AttributeValueMemberS{Value: typ}
		placeholders = append(placeholders, k)
	}
	in := &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("#t IN (" + strings.Join(placeholders, ", ") + ")"),
		ExpressionAttributeNames:  map[string]string{"#t": schema.EventsType},
		ExpressionAttributeValues: values,
	}
	byStream := map[string]*Mismatch{}
	refunds := map[string]Mismatch{} // stream: what its refund record says
	for {
		out, err := db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("mismatch: scan %s: %w", table, err)
		}
		for _, item := range out.Items {
			r, err := dynamo.DecodeRecord(item)
			if err != nil {
				return nil, err
			}
			if err := add(r, byStream, refunds); err != nil {
				return nil, err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	list := make([]Mismatch, 0, len(byStream))
	for stream, m := range byStream {
		if r, ok := refunds[stream]; ok {
			m.Refund, m.RefundID = r.Refund, r.RefundID
		}
		list = append(list, *m)
	}
	slices.SortFunc(list, func(a, b Mismatch) int {
		if c := a.ReceivedAt.Compare(b.ReceivedAt); c != 0 {
			return c
		}
		return strings.Compare(a.EventID, b.EventID)
	})
	return list, nil
}

// add takes one record of a mismatch stream into the listing.
func add(r eventstore.Record, byStream map[string]*Mismatch, refunds map[string]Mismatch) error {
	switch r.Type {
	case command.ProviderEventMismatched{}.EventType():
		e, err := eventstore.Decode[command.ProviderEventMismatched](r, command.DecodeEvent)
		if err != nil {
			return fmt.Errorf("mismatch: %w", err)
		}
		rentalID, _ := payment.RentalIDFor(e.Reference)
		m := &Mismatch{Provider: e.Provider, EventID: e.EventID, Kind: e.Kind, PaymentReference: e.Reference, RentalID: rentalID,
			Fields: e.Fields, PaymentID: e.PaymentID, Amount: e.Amount, Currency: e.Currency,
			RecordedPaymentID: e.RecordedPaymentID, RecordedAmount: e.RecordedAmount, RecordedCurrency: e.RecordedCurrency,
			ReceivedAt: r.RecordedAt}
		if e.RefundDue {
			m.Refund = RefundDue
		}
		byStream[r.StreamID] = m
	case command.MismatchRefundRequested{}.EventType():
		e, err := eventstore.Decode[command.MismatchRefundRequested](r, command.DecodeEvent)
		if err != nil {
			return fmt.Errorf("mismatch: %w", err)
		}
		refunds[r.StreamID] = Mismatch{Refund: RefundRequested, RefundID: e.RefundID}
	case command.MismatchRefundOwed{}.EventType():
		if _, err := eventstore.Decode[command.MismatchRefundOwed](r, command.DecodeEvent); err != nil {
			return fmt.Errorf("mismatch: %w", err)
		}
		refunds[r.StreamID] = Mismatch{Refund: RefundOwed}
	}
	return nil
}
