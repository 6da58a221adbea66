package deadlinekinds_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// meter counts the Queries a table makes and the items DynamoDB reads for them.
type meter struct {
	*dynamodb.Client
	queries, read atomic.Int64
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := m.Client.Query(ctx, in, optFns...)
	m.queries.Add(1)
	if err == nil {
		m.read.Add(int64(out.ScannedCount))
	}
	return out, err
}

// reading returns the Queries made and the items read since the last call.
func (m *meter) reading() (queries, read int) {
	return int(m.queries.Swap(0)), int(m.read.Swap(0))
}

const (
	readShards   = 4
	clonesOfEach = 300
)

// seedEverySort projects a row of each sort the table holds as of now (a payment
// due, a process stuck, a return due, an overdue return, a refund owed, an owed
// cancellation, a parked record) and clones each clonesOfEach times, straight into
// the table, a millisecond apart and spread over the shards: so that every
// listing has at least 1,800 rows of sorts other than its own.
func seedEverySort(t *testing.T, table *deadlinetable.Table, client *dynamodb.Client, name string, now time.Time) {
	t.Helper()
	over := id("tplover")
	flag := requested(t, over, now)
	flag.Version, flag.Type = 4, "ReturnOverdue"
	flag.Data = fmt.Appendf(nil, `{"bikeId":"tplover","renter":"r","rentalId":%q,"approvedAt":%q,"dueAt":%q,"flaggedAt":%q}`,
		over, now.Add(-3*time.Hour).Format(time.RFC3339Nano), now.Add(-time.Hour).Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	applyTo(t, table,
		prepared(t, id("tplpay"), now),
		requested(t, id("tplstuck"), now),
		requested(t, id("tplret"), now.Add(-time.Hour)), approved(t, id("tplret"), now),
		requested(t, over, now.Add(-3*time.Hour)), approved(t, over, now.Add(-3*time.Hour)), flag,
		paymentRecord(t, id("tplrefund"), 4, payment.RefundOwed{Reference: payment.ReferenceFor(id("tplrefund")), PaymentID: "p", Amount: 1500, Currency: "EUR"}, now),
		owedAt(t, id("tplowed"), now),
		parkingRecord(t, eventfilter.Projector, "rentalpayment-"+id("tplparked"), 1, 1, false, now))
	out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(name)}) // a test's setup, on a table of a few items
	if err != nil {
		t.Fatal(err)
	}
	var puts []types.WriteRequest
	for _, item := range out.Items {
		shard, ok := item[attrKindShard].(*types.AttributeValueMemberS)
		if !ok {
			continue // a marker, or the table's own item
		}
		kind, _, _ := strings.Cut(shard.Value, "#")
		subject := item["subject"].(*types.AttributeValueMemberS).Value
		due, _ := strconv.ParseInt(item[attrDueAt].(*types.AttributeValueMemberN).Value, 10, 64)
		for i := range clonesOfEach {
			clone := map[string]types.AttributeValue{}
			for attr, v := range item {
				if s, ok := v.(*types.AttributeValueMemberS); ok {
					v = &types.AttributeValueMemberS{Value: strings.ReplaceAll(s.Value, "AAAAAAAAAAAAAAAAAAAAAA", fmt.Sprintf("%022d", i))}
				}
				clone[attr] = v
			}
			if !strings.Contains(subject, "AAAAAAAAAAAAAAAAAAAAAA") {
				t.Fatalf("the %s row about %s would be cloned onto itself", kind, subject)
			}
			clone[attrKindShard] = &types.AttributeValueMemberS{Value: kind + "#" + strconv.Itoa(i%readShards)}
			clone[attrDueAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(due+int64(i)+1, 10)}
			puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: clone}})
		}
	}
	if len(puts) != 7*clonesOfEach {
		t.Fatalf("cloning %d rows, want %d of each of 7 sorts", len(puts), clonesOfEach)
	}
	for start := 0; start < len(puts); start += 25 {
		batch := puts[start:min(start+25, len(puts))]
		for len(batch) > 0 {
			res, err := client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{name: batch}})
			if err != nil {
				t.Fatal(err)
			}
			batch = res.UnprocessedItems[name]
		}
	}
}

// TestTheListingsAndTheSweepReadAboutWhatTheyReturn fills the Deadlines table with
// 301 rows of each sort the service keeps, and counts the Queries and the items
// DynamoDB reads (ScannedCount) for each of the service's listings and for a sweep:
// the to-do list (deadlines.List, GET /deadlines) for every listed kind and every
// overdue value, and the pending payments (GET /payments/pending) read at most
// their limit and a page (of the limit's size, for the rows due in the same
// millisecond as the last) from each shard of each kind they list, in at most two
// Queries; the lists of every owed cancellation and every parked record, and the
// sweep, read what they return and nothing else.
func TestTheListingsAndTheSweepReadAboutWhatTheyReturn(t *testing.T) {
	client := emulatortest.DynamoDB(t)
	name := newDeadlinesTable(t, client)
	m := &meter{Client: client}
	table, err := deadlinetable.New(m, name, serviceKinds, deadlinetable.WithShards(readShards))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	seedEverySort(t, table, client, name, now)
	m.reading()
	yes, no := true, false
	for _, limit := range []int{1, 10} {
		for _, listed := range append([]string{""}, deadlinekinds.Listed()...) {
			kinds := len(serviceKinds.All())
			if listed != "" {
				kinds = len(serviceKinds.ListedAs(listed))
			}
			for _, overdue := range []*bool{nil, &yes, &no} {
				page, err := deadlines.List(ctx, table, serviceKinds, deadlines.Query{Kind: listed, Overdue: overdue, Now: now.Add(time.Minute), Limit: limit})
				queries, read := m.reading()
				if err != nil || len(page.Rows) > limit || read > 2*limit*readShards*kinds || queries > 2*readShards*kinds || page.Read != read {
					t.Errorf("the to-do list of %q, overdue %v, limit %d: %d rows, %d Queries read %d items (%d said), %v; want at most %d items in %d Queries",
						listed, overdue, limit, len(page.Rows), queries, read, page.Read, err, 2*limit*readShards*kinds, 2*readShards*kinds)
				}
			}
		}
		for overdue, at := range map[bool]time.Time{false: now, true: now.Add(time.Hour)} {
			rows, _, err := listing(table).Payments(ctx, overdue, at, limit)
			if queries, read := m.reading(); err != nil || len(rows) != limit || read > 2*limit*readShards || queries > 2*readShards {
				t.Errorf("the pending payments, overdue %v, limit %d: %d rows, %d Queries read %d items, %v", overdue, limit, len(rows), queries, read, err)
			}
		}
	}
	owed, read, err := listing(table).OwedCancellations(ctx)
	if queries, counted := m.reading(); err != nil || len(owed) != clonesOfEach+1 || read != len(owed) || counted != read || queries > 2*readShards {
		t.Errorf("the owed cancellations: %d, %d Queries read %d items (%d said), %v; want the %d owed, read alone", len(owed), queries, counted, read, err, clonesOfEach+1)
	}
	parked, read, err := listing(table).Parked(ctx)
	if queries, counted := m.reading(); err != nil || len(parked) != clonesOfEach+1 || read != len(parked) || counted != read || queries > 2*readShards {
		t.Errorf("the parked records: %d, %d Queries read %d items (%d said), %v; want the %d parked, read alone", len(parked), queries, counted, read, err, clonesOfEach+1)
	}
	sum, err := sweepAt(newSweeper(t, table, deadlinekinds.Policy{}, deadlinekinds.Receivers{}, 0), now.Add(time.Hour))
	_, read = m.reading()
	items := 0
	for _, k := range sum.Kinds {
		items += k.ItemsRead
		if k.ItemsRead != k.Found {
			t.Errorf("the sweep read %d items of %s and found %d overdue: want it to read what it finds", k.ItemsRead, k.Kind, k.Found)
		}
	}
	if err != nil || read != items || of(sum, deadlinekinds.Payment).Found != clonesOfEach+1 || of(sum, deadlinekinds.Cancellation).Found != clonesOfEach+1 {
		t.Errorf("the sweep: %+v, %v; %d items read, %d counted", sum, err, read, items)
	}
}
