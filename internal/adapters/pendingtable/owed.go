package pendingtable

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Owed cancellations. Besides its outstanding payments and open processes, the
// projection keeps one row per payment whose cancellation is owed to the provider
// (payment.CancellationOwedAtProvider): created with that event, stamped with its
// time, and settled when the provider confirms the cancellation or a success
// arrives meanwhile. Its key is the payment's stream id, and it is in the same
// index under the open processes' due shards ("open-0", "open-1", …), stamped
// with the time it became owed negated (-Unix milliseconds; the index carries
// keys only), so that the sweep's query for stuck rentals, whose cutoff is always
// later, finds every one first, and reads nothing more when none is owed: the
// sweep then tries each again (Sweeper.Sweep). No payment query reads one.

// settledMarker is the settled value of an owed cancellation's row once settled.
const settledMarker = "cancellation-settled"

// OwedKey returns the PendingPayments key of a payment's owed-cancellation row.
func OwedKey(reference string) string { return payment.StreamID(reference) }

// referenceOfOwedKey reverses OwedKey.
func referenceOfOwedKey(key string) (string, bool) {
	ref, ok := strings.CutPrefix(key, payment.StreamID(""))
	if _, err := payment.RentalIDFor(ref); err != nil {
		return "", false
	}
	return ref, ok
}

// owed creates a payment's owed-cancellation row, stamped with the time the
// cancellation was found owed, unless the payment already has one: the same row, or
// the marker of a settled one, which a late or replayed event never reopens (a
// payment's cancellation becomes owed once at most).
func (p *Projection) owed(ctx context.Context, ref string, r eventstore.Record) error {
	rentalID, _ := payment.RentalIDFor(ref)
	return p.createOnce(ctx, OwedKey(ref), rentalID, -r.RecordedAt.UnixMilli(), p.owedShardOf(ref))
}

// owedShardOf returns the index partition of a payment's owed-cancellation row.
func (p *Projection) owedShardOf(reference string) string {
	return OpenShardPrefix + p.ShardOf(reference)
}

// owedCutoff is the cutoff of a query of the open processes' partitions that finds
// the owed cancellations alone: they are stamped below 0 in the index.
var owedCutoff = time.UnixMilli(0)

// cancellationSettled turns a payment's owed-cancellation row into a marker that
// leaves the index and that DynamoDB's TTL deletes later. Settling is final, so the
// marker is written whatever the row held, and before the row existed if the
// settlement arrives first.
func (p *Projection) cancellationSettled(ctx context.Context, ref string, r eventstore.Record) error {
	rentalID, _ := payment.RentalIDFor(ref)
	return p.finalMarker(ctx, OwedKey(ref), rentalID, settledMarker, r, "owed cancellation")
}

func decodeOwed(item map[string]types.AttributeValue) (deadline.OwedCancellation, error) {
	key, ms, err := stamped(item, "owed-cancellation row", true)
	if err != nil {
		return deadline.OwedCancellation{}, err
	}
	ref, ok := referenceOfOwedKey(key)
	if !ok {
		return deadline.OwedCancellation{}, fmt.Errorf("deadline: owed-cancellation row %q: not a payment's key", key)
	}
	rentalID, _ := payment.RentalIDFor(ref)
	return deadline.OwedCancellation{Reference: ref, RentalID: rentalID, OwedAt: time.UnixMilli(-ms).UTC()}, nil
}

// OwedCancellations implements deadline.Index: one Query per shard of the index,
// for the rows stamped below 0, never a scan. It also returns how many items DynamoDB
// read.
func (p *Projection) OwedCancellations(ctx context.Context) ([]deadline.OwedCancellation, int, error) {
	_, owed, read, err := p.OpenAndOwed(ctx, owedCutoff)
	return owed, read, err
}

// openOrOwed is one row of the open processes' partitions: an open process, an
// owed cancellation or a parked stream record (parked.go), told apart by its key.
type openOrOwed struct {
	open   *deadline.Open
	owed   *deadline.OwedCancellation
	parked *deadline.Parked
}

func decodeOpenOrOwed(item map[string]types.AttributeValue) (openOrOwed, error) {
	if key, ok := item[schema.PendingReference].(*types.AttributeValueMemberS); ok && strings.HasPrefix(key.Value, ParkedKeyPrefix) {
		p, err := decodeParked(item)
		return openOrOwed{parked: &p}, err
	}
	if key, ok := item[schema.PendingReference].(*types.AttributeValueMemberS); ok && strings.HasPrefix(key.Value, payment.StreamID("")) {
		o, err := decodeOwed(item)
		return openOrOwed{owed: &o}, err
	}
	o, err := decodeOpen(item)
	return openOrOwed{open: &o}, err
}
