package pendingtable

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Refunds owed. Besides the rows the sweep reads, the projection keeps one row per
// refund the service owes (payment.RefundOwed): created with that event, stamped
// with its time, and settled when the payment is refunded (payment.PaymentRefunded),
// so that operators list them by a query per shard instead of a scan of the Events
// table (GET /refunds/owed). Its key is RefundKeyPrefix and the payment's
// reference; it is in the same index under due shards of its own ("refund-0",
// "refund-1", …), which neither the sweep nor the pending list ever reads.

// RefundKeyPrefix starts the key of every refund-owed row. No payment reference,
// process or payment stream id, or parked record's key starts with it.
const RefundKeyPrefix = "refund#"

// RefundShardPrefix starts the due shard of every refund-owed row.
const RefundShardPrefix = "refund-"

// refundedMarker is the settled value of a refund-owed row once refunded.
const refundedMarker = "refunded"

// RefundKey returns the PendingPayments key of a payment's refund-owed row.
func RefundKey(reference string) string { return RefundKeyPrefix + reference }

func (p *Projection) refundShardOf(reference string) string {
	return RefundShardPrefix + p.ShardOf(reference)
}

// refundOwed creates a payment's refund-owed row, stamped with the time it became
// owed, unless it has one already: the same row, or the marker of a refund made,
// which a late or replayed RefundOwed never reopens.
func (p *Projection) refundOwed(ctx context.Context, ref string, r eventstore.Record) error {
	rentalID, _ := payment.RentalIDFor(ref)
	return p.createOnce(ctx, RefundKey(ref), rentalID, r.RecordedAt.UnixMilli(), p.refundShardOf(ref))
}

// refunded turns a payment's refund-owed row into a marker out of the index, which
// DynamoDB's TTL deletes later; written whatever the row held, and before it
// existed if the refund's record arrives first.
func (p *Projection) refunded(ctx context.Context, ref string, r eventstore.Record) error {
	rentalID, _ := payment.RentalIDFor(ref)
	return p.finalMarker(ctx, RefundKey(ref), rentalID, refundedMarker, r, "refund owed")
}

func decodeRefund(item map[string]types.AttributeValue) (deadline.RefundOwed, error) {
	key, ms, err := stamped(item, "refund-owed row", false)
	if err != nil {
		return deadline.RefundOwed{}, err
	}
	ref, ok := strings.CutPrefix(key, RefundKeyPrefix)
	rentalID, err := payment.RentalIDFor(ref)
	if !ok || err != nil {
		return deadline.RefundOwed{}, fmt.Errorf("deadline: refund-owed row %q: not a payment's key", key)
	}
	return deadline.RefundOwed{Reference: ref, RentalID: rentalID, OwedSince: time.UnixMilli(ms).UTC()}, nil
}

// RefundsOwed returns every refund owed, oldest first: one Query per shard of the
// refund rows' partitions, never a scan. It also returns how many items DynamoDB
// read.
func (p *Projection) RefundsOwed(ctx context.Context) ([]deadline.RefundOwed, int, error) {
	var all []deadline.RefundOwed
	read := 0
	for shard := range p.shards {
		n, err := queryIndex(ctx, p, RefundShardPrefix+strconv.Itoa(shard), time.Time{}, 0, decodeRefund, func(rows []deadline.RefundOwed) bool {
			all = append(all, rows...)
			return true
		})
		read += n
		if err != nil {
			return nil, read, err
		}
	}
	deadline.SortRefunds(all)
	return all, read, nil
}
