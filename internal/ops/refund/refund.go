// Package refund lists the refunds the service owes: money a provider could not
// refund (it cannot refund at all, or refused this refund for good) took for a
// rental that did not get its bike (RefundOwed), with no refund recorded since. Operators pay them (rentalctl refunds); an alarm reports each one.
package refund

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamoTypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// Owed is one refund owed.
type Owed struct {
	PaymentReference string    `json:"paymentReference"`
	RentalID         string    `json:"rentalId"`
	PaymentID        string    `json:"paymentId"`
	Amount           int64     `json:"amount"`
	Currency         string    `json:"currency"`
	OwedSince        time.Time `json:"owedSince"`
	// Reason is what the provider refused, for a provider that can refund
	// (RefundOwed.Reason); empty for one that cannot refund at all.
	Reason string `json:"reason,omitempty"`
}

// Scanner is the part of the DynamoDB client List uses.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// List returns the refunds owed in the Events table, oldest first: every RefundOwed
// whose payment has no event that settles a refund (payment.SettlesRefund: the
// provider's PaymentRefunded, or a RefundMadeByHand). Refunds are rare and this is
// an operator's tool, so it scans the table, filtered on those event types; it needs
// dynamodb:Scan on the table. progress, if not nil, is called after each page of the
// scan with the number of items scanned so far (the filter's rejects included).
func List(ctx context.Context, db Scanner, table string, progress func(scanned int)) ([]Owed, error) {
	owed := map[string]Owed{}
	refunded := map[string]bool{}
	in := scanInput(table)
	scanned := 0
	for {
		out, err := db.Scan(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("refund: scan %s: %w", table, err)
		}
		scanned += int(out.ScannedCount)
		for _, item := range out.Items {
			r, err := dynamo.DecodeRecord(item)
			if err != nil {
				return nil, err
			}
			e, err := payment.DecodeEvent(r.Type, r.Data)
			if err != nil {
				return nil, fmt.Errorf("refund: %s version %d: %w", r.StreamID, r.Version, err)
			}
			if o, ok := e.(payment.RefundOwed); ok {
				rentalID, _ := payment.RentalIDFor(o.Reference)
				owed[o.Reference] = Owed{PaymentReference: o.Reference, RentalID: rentalID, PaymentID: o.PaymentID,
					Amount: o.Amount, Currency: o.Currency, OwedSince: r.RecordedAt, Reason: o.Reason}
			} else if payment.SettlesRefund(r.Type) {
				refunded[payment.ReferenceOf(e)] = true
			}
		}
		if progress != nil {
			progress(scanned)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	var list []Owed
	for ref, o := range owed {
		if !refunded[ref] {
			list = append(list, o)
		}
	}
	slices.SortFunc(list, func(a, b Owed) int { return a.OwedSince.Compare(b.OwedSince) })
	return list, nil
}

// scanInput is the Scan of table for the events List reads: RefundOwed, and every
// event that settles a refund.
func scanInput(table string) *dynamodb.ScanInput {
	types := append([]string{payment.RefundOwed{}.EventType()}, payment.RefundSettlementTypes()...)
	values := map[string]dynamoTypes.AttributeValue{}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = fmt.Sprintf(":t%d", i)
		values[names[i]] = &dynamoTypes.AttributeValueMemberS{Value: t}
	}
	return &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("#t IN (" + strings.Join(names, ", ") + ")"),
		ExpressionAttributeNames:  map[string]string{"#t": schema.EventsType},
		ExpressionAttributeValues: values,
	}
}
