package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
)

// item reads the item at key as attribute: value, strings and numbers alike.
func item(t *testing.T, client *dynamodb.Client, table, key string) map[string]string {
	t.Helper()
	out, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"key": &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, v := range out.Item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			got[name] = v.Value
		case *types.AttributeValueMemberN:
			got[name] = v.Value
		default:
			t.Fatalf("%s: %s is a %T", key, name, v)
		}
	}
	return got
}

// TestASettledRowLeavesAMarkerThatExpires: the item of a settled row is out of the
// index (no kindShard), says how it settled, and expires the marker TTL after the
// settling record; a replayed or late opening leaves it so.
func TestASettledRowLeavesAMarkerThatExpires(t *testing.T) {
	client, name := newTable(t)
	tb, err := dynamo.New(client, name, kinds, dynamo.WithMarkerTTL(time.Hour), dynamo.WithShards(2))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, tb, rec("InvoiceSent", "inv-1", 1, t0))
	due := t0.Add(7 * 24 * time.Hour)
	opened := item(t, client, name, "invoice#inv-1")
	if want := map[string]string{"key": "invoice#inv-1", "subject": "inv-1", "dueAtMs": strconv.FormatInt(due.UnixMilli(), 10), "kindShard": opened["kindShard"]}; !mapsEqual(opened, want) ||
		(opened["kindShard"] != "invoice#0" && opened["kindShard"] != "invoice#1") {
		t.Errorf("opened: %v, want %v in shard 0 or 1", opened, want)
	}
	paid := t0.Add(time.Minute + 500*time.Millisecond)
	apply(t, tb, rec("InvoicePaid", "inv-1", 2, paid),
		rec("InvoiceSent", "inv-1", 1, t0), rec("InvoiceSent", "inv-1", 3, t0.Add(time.Hour))) // replayed; a late one
	got := item(t, client, name, "invoice#inv-1")
	want := map[string]string{"key": "invoice#inv-1", "subject": "inv-1", "dueAtMs": opened["dueAtMs"], "settled": "InvoicePaid",
		"expiresAt": strconv.FormatInt(paid.Add(time.Hour).Unix(), 10)}
	if !mapsEqual(got, want) {
		t.Errorf("settled, then opened late: %v, want %v", got, want)
	}
	if rows := outstanding(t, tb, invoice); len(rows) != 0 {
		t.Errorf("outstanding %v, want none", rows)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestAnOrderedRowEndsAsItsLatestRecordSaysInEveryOrder: a reminder set (1), set
// again for later (3) and done (2), delivered in every order one by one and all
// at once, ends outstanding, due when 3 says, with 3's version.
func TestAnOrderedRowEndsAsItsLatestRecordSaysInEveryOrder(t *testing.T) {
	client, name := newTable(t)
	tb, err := dynamo.New(client, name, kinds, dynamo.WithShards(3))
	if err != nil {
		t.Fatal(err)
	}
	later := t0.Add(48 * time.Hour)
	records := func(stream string) []deadlines.Record {
		return []deadlines.Record{rec("ReminderSet", stream, 1, t0), rec("ReminderDone", stream, 2, t0.Add(time.Minute)),
			dueRec("ReminderSet", stream, 3, t0.Add(2*time.Minute), later)}
	}
	var want []string
	for i, order := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		stream := fmt.Sprintf("r-%d", i)
		recs := records(stream)
		for _, j := range order {
			apply(t, tb, recs[j])
		}
		want = append(want, stream+"@48h0m0s")
	}
	for i := range 8 { // all at once, each record twice
		stream := fmt.Sprintf("r-all-%d", i)
		var wg sync.WaitGroup
		for _, r := range slices.Concat(records(stream), records(stream)) {
			wg.Go(func() {
				if err := tb.Apply(context.Background(), r); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		want = append(want, stream+"@48h0m0s")
	}
	slices.Sort(want)
	if got := outstanding(t, tb, reminder); !slices.Equal(got, want) {
		t.Errorf("outstanding %v, want %v", got, want)
	}
	if v := item(t, client, name, "reminder#r-0")["version"]; v != "3" {
		t.Errorf("version %s, want 3", v)
	}
}

// TestATakenRowStaysTakenInEveryOrder: a reminder escalated (2) is the
// operators', due when escalated, whatever order its setting (1) and its setting
// again (3) come in: a taken row is never the taken kind's to move.
func TestATakenRowStaysTakenInEveryOrder(t *testing.T) {
	tb := open(t, kinds)
	escalated := t0.Add(time.Hour)
	for i, order := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		stream := fmt.Sprintf("e-%d", i)
		recs := []deadlines.Record{rec("ReminderSet", stream, 1, t0), rec("ReminderEscalated", stream, 2, escalated),
			dueRec("ReminderSet", stream, 3, t0.Add(2*time.Hour), t0.Add(72*time.Hour))}
		for _, j := range order {
			apply(t, tb, recs[j])
		}
		row, ok, err := tb.Row(context.Background(), escalation, stream)
		if want := (deadlines.Row{Kind: "escalation", Subject: stream, Due: escalated}); err != nil || !ok || row != want {
			t.Errorf("order %v: Row = %+v, %v, %v; want %+v", order, row, ok, err, want)
		}
		if row, ok, err := tb.Row(context.Background(), reminder, stream); ok || err != nil {
			t.Errorf("order %v: the reminder's Row = %+v, %v, %v; want none", order, row, ok, err)
		}
	}
	// Done settles the key, whoever's row it holds; set later, it is the
	// reminder's again.
	apply(t, tb, rec("ReminderDone", "e-0", 4, t0.Add(3*time.Hour)), dueRec("ReminderSet", "e-0", 5, t0.Add(4*time.Hour), t0.Add(96*time.Hour)))
	if got, want := outstanding(t, tb, reminder), []string{"e-0@96h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("reminders %v, want %v", got, want)
	}
	if got := outstanding(t, tb, escalation); len(got) != 5 || slices.Contains(got, "e-0@1h0m0s") {
		t.Errorf("escalations %v, want the five others", got)
	}
}

// TestAKeySettledByTwoKindsIsWrittenOnce: an invoice paid settles it and its
// collection, which share the key: one write.
func TestAKeySettledByTwoKindsIsWrittenOnce(t *testing.T) {
	client, name := newTable(t)
	calls := &counting{API: client}
	tb, err := dynamo.New(calls, name, kinds)
	if err != nil {
		t.Fatal(err)
	}
	apply(t, tb, rec("InvoiceSent", "inv-2", 1, t0), dueRec("SentToCollection", "inv-2", 2, t0.Add(8*24*time.Hour), t0.Add(9*24*time.Hour)))
	if got, want := outstanding(t, tb, collection), []string{"inv-2@216h0m0s"}; !slices.Equal(got, want) {
		t.Fatalf("collection %v, want %v", got, want)
	}
	before := calls.updates
	apply(t, tb, rec("InvoicePaid", "inv-2", 3, t0.Add(10*24*time.Hour)))
	if n := calls.updates - before; n != 1 {
		t.Errorf("%d writes for the settlement, want 1", n)
	}
	if a, b := outstanding(t, tb, invoice), outstanding(t, tb, collection); len(a)+len(b) != 0 {
		t.Errorf("outstanding invoices %v, collections %v; want none", a, b)
	}
}

func TestAnOrderedKindsRecordWithoutAPositionIsCorrupt(t *testing.T) {
	tb := open(t, kinds)
	if err := tb.Apply(context.Background(), rec("ReminderSet", "r", 0, t0)); !errors.Is(err, deadlines.ErrCorruptRecord) {
		t.Errorf("Apply at position 0: %v, want ErrCorruptRecord", err)
	}
	if got := outstanding(t, tb, reminder); len(got) != 0 {
		t.Errorf("reminders %v, want none", got)
	}
}

// TestAFinalSettlementOfASharedKeyStaysFinal: an escalation, not ordered, closed
// settles the key finally: the reminder's later setting does not open it again.
func TestAFinalSettlementOfASharedKeyStaysFinal(t *testing.T) {
	tb := open(t, kinds)
	apply(t, tb, rec("ReminderSet", "f", 1, t0), rec("ReminderEscalated", "f", 2, t0.Add(time.Hour)),
		rec("EscalationClosed", "f", 3, t0.Add(2*time.Hour)), rec("ReminderSet", "f", 4, t0.Add(3*time.Hour)))
	if a, b := outstanding(t, tb, reminder), outstanding(t, tb, escalation); len(a)+len(b) != 0 {
		t.Errorf("reminders %v, escalations %v; want none", a, b)
	}
}

// TestASubjectTheKindDoesNotReadBackIsCorrupt, and written nowhere: its row would
// break every read of its shard.
func TestASubjectTheKindDoesNotReadBackIsCorrupt(t *testing.T) {
	numbered := deadlines.Kind{Name: "numbered", After: time.Hour, Work: deadlines.Send{},
		Changes: deadlines.Events{Opens: []string{"Numbered"}},
		Valid:   func(s string) bool { _, err := strconv.Atoi(s); return err == nil }}
	tb := open(t, deadlines.MustKinds(numbered))
	apply(t, tb, rec("Numbered", "12", 1, t0))
	if err := tb.Apply(context.Background(), rec("Numbered", "twelve", 1, t0)); !errors.Is(err, deadlines.ErrCorruptRecord) {
		t.Errorf("Apply of a subject the kind refuses: %v, want ErrCorruptRecord", err)
	}
	if got, want := outstanding(t, tb, numbered), []string{"12@1h0m0s"}; !slices.Equal(got, want) {
		t.Errorf("outstanding %v, want %v", got, want)
	}
}
