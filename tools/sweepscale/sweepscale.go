// Package sweepscale measures what the Deadlines table's index saves the sweep: the
// items one sweep reads to find the overdue payments among many outstanding ones,
// against the scan-and-filter it replaces, over the same table (make bench-sweep,
// charted by cmd/sweepchart).
package sweepscale

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

// Seed fills the Deadlines table t, named table and reached through client, with
// the rows of pending rentals' payments, each opened by its PaymentPrepared: overdue
// of them prepared an hour before now, the rest a minute before it, so that with a
// payment timeout under an hour and over a minute overdue of them are due before
// now. The first row t writes itself, applying its record as the projector does;
// the others are written as that one is, 25 to a BatchWriteItem, one request at a
// time (moto's proxy passes one at a time: parallel writers would gain nothing),
// so that a large table fills in seconds rather than in one conditional write a
// row. A first row written otherwise than Seed would write it is an error.
func Seed(ctx context.Context, client *dynamodb.Client, t *deadlinetable.Table, table string, k deadlines.Kind, pending, overdue int, now time.Time) error {
	if pending < 1 || overdue > pending {
		return fmt.Errorf("sweepscale: %d overdue of %d pending", overdue, pending)
	}
	first := prepared(0, overdue > 0, now)
	if err := t.Apply(ctx, first); err != nil {
		return fmt.Errorf("sweepscale: apply %s: %w", first.Type, err)
	}
	rows := rowWriter{key: aws.ToString(deadlinetable.Definition(table).KeySchema[0].AttributeName), shards: t.Shards(), kind: k}
	got, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{rows.key: &types.AttributeValueMemberS{Value: k.Key(subjectOf(0))}}})
	if err != nil {
		return fmt.Errorf("sweepscale: read the first row: %w", err)
	}
	if want := rows.item(0, first.At); !reflect.DeepEqual(got.Item, want) {
		return fmt.Errorf("sweepscale: the table wrote the first row as %v, Seed writes it as %v", got.Item, want)
	}
	var batch []types.WriteRequest
	for i := 1; i < pending; i++ {
		batch = append(batch, types.WriteRequest{PutRequest: &types.PutRequest{Item: rows.item(i, prepared(i, i < overdue, now).At)}})
		if len(batch) == 25 || i == pending-1 {
			if err := writeAll(ctx, client, table, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// rowWriter writes outstanding rows of an ordered kind as the Deadlines table
// does, for a record at position 1.
type rowWriter struct {
	key    string
	shards int
	kind   deadlines.Kind
}

// item is the row the i-th rental's PaymentPrepared, recorded at at, opens.
func (w rowWriter) item(i int, at time.Time) map[string]types.AttributeValue {
	keys := deadlinetable.Definition("").GlobalSecondaryIndexes[0].KeySchema // the kind and shard, the due time
	subject := subjectOf(i)
	h := fnv.New32a()
	h.Write([]byte(subject))
	return map[string]types.AttributeValue{
		w.key:                               &types.AttributeValueMemberS{Value: w.kind.Key(subject)},
		"subject":                           &types.AttributeValueMemberS{Value: subject},
		aws.ToString(keys[0].AttributeName): &types.AttributeValueMemberS{Value: w.kind.Name + "#" + strconv.Itoa(int(h.Sum32()%uint32(w.shards)))},
		aws.ToString(keys[1].AttributeName): &types.AttributeValueMemberN{Value: strconv.FormatInt(w.kind.DueAt(deadlines.Change{}, at).UnixMilli(), 10)},
		"version":                           &types.AttributeValueMemberN{Value: "1"},
	}
}

// writeAll writes batch to table, again and again until nothing is left unprocessed.
func writeAll(ctx context.Context, client *dynamodb.Client, table string, batch []types.WriteRequest) error {
	for len(batch) > 0 {
		out, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: batch}})
		if err != nil {
			return fmt.Errorf("sweepscale: write rows: %w", err)
		}
		batch = out.UnprocessedItems[table]
	}
	return nil
}

// subjectOf is the i-th rental's id: the subject of its payment's row.
func subjectOf(i int) string {
	return rental.NewRentalID(fmt.Sprintf("bike%d", i), fmt.Sprintf("%022d", i))
}

// prepared is the i-th rental's PaymentPrepared, recorded an hour before now if
// overdue and a minute before it otherwise.
func prepared(i int, overdue bool, now time.Time) deadlines.Record {
	at := now.Add(-time.Minute)
	if overdue {
		at = now.Add(-time.Hour)
	}
	ref := payment.ReferenceFor(subjectOf(i))
	data, _ := json.Marshal(payment.PaymentPrepared{PaymentID: "pay-" + strconv.Itoa(i), Reference: ref, Amount: 1500, Currency: "EUR"})
	return deadlines.Record{Stream: payment.StreamID(ref), Position: 1, Type: payment.PaymentPrepared{}.EventType(), At: at, Data: data}
}

// Scan is the baseline the index replaces: a Scan of the whole Deadlines table
// named table, filtered to the outstanding rows due before cutoff. It returns the
// rows it found and the items it read.
func Scan(ctx context.Context, client *dynamodb.Client, table string, cutoff time.Time) (found, read int, err error) {
	keys := deadlinetable.Definition(table).GlobalSecondaryIndexes[0].KeySchema // the kind and shard, the due time
	pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{
		TableName:                aws.String(table),
		FilterExpression:         aws.String("attribute_exists(#shard) AND #due < :cutoff"),
		ExpressionAttributeNames: map[string]string{"#shard": aws.ToString(keys[0].AttributeName), "#due": aws.ToString(keys[1].AttributeName)},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":cutoff": &types.AttributeValueMemberN{Value: strconv.FormatInt(cutoff.UnixMilli(), 10)},
		},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return found, read, fmt.Errorf("sweepscale: scan %s: %w", table, err)
		}
		found += int(page.Count)
		read += int(page.ScannedCount)
	}
	return found, read, nil
}
