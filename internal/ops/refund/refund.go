// Package refund lists the refunds the service owes: money a provider took for a
// rental that did not get its bike and could not refund (it cannot refund at all,
// or refused this refund for good), on the rental's own payment (RefundOwed) or on
// another provider payment under its reference (UnexpectedRefundOwed), each with
// no refund recorded since. Operators pay them (rentalctl refunds); an alarm
// reports each one.
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
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// Owed is one refund owed. A rental may owe more than one: its own payment's, and
// one per other provider payment that took money under its reference.
type Owed struct {
	PaymentReference string `json:"paymentReference"`
	RentalID         string `json:"rentalId"`
	// PaymentID is the provider payment the money was taken on, which names the
	// refund when it is recorded made by hand.
	PaymentID string `json:"paymentId"`
	// Amount and Currency are what the provider said it took: 0 and "" where it
	// did not say.
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	OwedSince time.Time `json:"owedSince"`
	// Cause is deadlinekinds.CauseLateSuccess (the rental's own payment) or
	// deadlinekinds.CauseOtherPayment.
	Cause string `json:"cause"`
	// Reason is what the provider refused, for a provider that can refund
	// (RefundOwed.Reason); empty for one that cannot refund at all.
	Reason string `json:"reason,omitempty"`
}

// Scanner is the part of the DynamoDB client List uses.
type Scanner interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// List returns the refunds owed in the Events table, oldest first: each refund
// (payment.RefundOwedChangeOf) whose last event in its payment's stream opens it,
// so that a refund owed again after the provider's refund failed is listed, and one
// settled (the provider's PaymentRefunded, a RefundMadeByHand or an
// UnexpectedRefundMadeByHand) is not. Refunds are rare and this is an operator's
// tool, so it scans the table, filtered on those event types; it needs
// dynamodb:Scan on the table. progress, if not nil, is called after each page of
// the scan with the number of items scanned so far (the filter's rejects
// included).
func List(ctx context.Context, db Scanner, table string, progress func(scanned int)) ([]Owed, error) {
	type key struct{ reference, paymentID string }
	type last struct {
		version int64
		open    bool
		owed    Owed
	}
	refunds := map[key]last{}
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
			c, ok := payment.RefundOwedChangeOf(e)
			k := key{c.Reference, c.PaymentID}
			if l, seen := refunds[k]; !ok || (seen && l.version > r.Version) {
				continue // the scan reads in no order: the stream's last event decides
			}
			l := last{version: r.Version, open: !c.Settled}
			if l.open {
				rentalID, _ := payment.RentalIDFor(c.Reference)
				l.owed = Owed{PaymentReference: c.Reference, RentalID: rentalID, OwedSince: r.RecordedAt, Cause: deadlinekinds.CauseOf(c),
					PaymentID: c.Owed.PaymentID, Amount: c.Owed.Amount, Currency: c.Owed.Currency, Reason: c.Owed.Reason}
			}
			refunds[k] = l
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
	for _, l := range refunds {
		if l.open {
			list = append(list, l.owed)
		}
	}
	slices.SortFunc(list, func(a, b Owed) int {
		if c := a.OwedSince.Compare(b.OwedSince); c != 0 {
			return c
		}
		return strings.Compare(a.PaymentID, b.PaymentID)
	})
	return list, nil
}

// scanInput is the Scan of table for the events List reads: those that open or
// settle a refund owed (payment.RefundOwedTypes).
func scanInput(table string) *dynamodb.ScanInput {
	types := payment.RefundOwedTypes()
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
