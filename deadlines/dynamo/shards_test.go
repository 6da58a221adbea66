package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
)

// TestCheckShardsRecordsTheFirstCountAndRefusesAnother, however many writers
// check at once.
func TestCheckShardsRecordsTheFirstCountAndRefusesAnother(t *testing.T) {
	client, name := newTable(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = map[int][]error{}
	)
	for i := range 8 {
		shards := 2 + i%2
		tb, err := dynamo.New(client, name, kinds, dynamo.WithShards(shards))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			err := tb.CheckShards(context.Background())
			mu.Lock()
			errs[shards] = append(errs[shards], err)
			mu.Unlock()
		})
	}
	wg.Wait()
	won, lost := 2, 3
	if errs[2][0] != nil {
		won, lost = 3, 2
	}
	for _, err := range errs[won] {
		if err != nil {
			t.Errorf("a writer with the recorded count %d: %v", won, err)
		}
	}
	for _, err := range errs[lost] {
		var mismatch *dynamo.ShardMismatchError
		if !errors.Is(err, dynamo.ErrShardMismatch) || !errors.As(err, &mismatch) || mismatch.TableShards != won || mismatch.Shards != lost || mismatch.Table != name {
			t.Errorf("a writer with %d shards: %v, want a mismatch with the recorded %d", lost, err, won)
		}
	}
}

// fill applies to p invoices and reminders, some settled, some taken over, and
// returns what is outstanding, kind by kind.
func fill(t *testing.T, p deadlines.Projection) map[string][]string {
	t.Helper()
	for i := range 24 {
		s := fmt.Sprintf("inv-%02d", i)
		apply(t, p, rec("InvoiceSent", s, 1, t0.Add(time.Duration(i)*time.Minute)))
		switch i % 4 {
		case 1:
			apply(t, p, rec("InvoicePaid", s, 2, t0))
		case 2:
			apply(t, p, dueRec("SentToCollection", s, 2, t0, t0.Add(time.Duration(i)*time.Hour)))
		}
		apply(t, p, dueRec("ReminderSet", "r-"+s, 1, t0, t0.Add(time.Duration(i)*time.Second)))
	}
	return everything(t, p)
}

func everything(t *testing.T, idx deadlines.Index) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, k := range kinds.All() {
		out[k.Name] = outstanding(t, idx, k)
	}
	return out
}

func sameRows(a, b map[string][]string) bool {
	for _, k := range kinds.Names() {
		if !slices.Equal(a[k], b[k]) {
			return false
		}
	}
	return true
}

// TestReshardMovesEveryOutstandingRowToItsShard: rows written with 4 shards are
// all found, each once, by a table of 1 after Reshard, and by one of 7 after
// another; settled rows stay settled; and the table records the new count.
func TestReshardMovesEveryOutstandingRowToItsShard(t *testing.T) {
	client, name := newTable(t)
	table := func(shards int) *dynamo.Table {
		tb, err := dynamo.New(client, name, kinds, dynamo.WithShards(shards))
		if err != nil {
			t.Fatal(err)
		}
		return tb
	}
	four := table(4)
	if err := four.CheckShards(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := fill(t, four)
	if len(want["invoice"]) != 12 || len(want["collection"]) != 6 || len(want["reminder"]) != 24 {
		t.Fatalf("outstanding %v", want)
	}
	for _, n := range []int{1, 7} {
		tb := table(n)
		if err := tb.CheckShards(context.Background()); !errors.Is(err, dynamo.ErrShardMismatch) {
			t.Fatalf("CheckShards with %d before Reshard: %v, want a mismatch", n, err)
		}
		moved, err := tb.Reshard(context.Background())
		if err != nil || moved == 0 {
			t.Fatalf("Reshard to %d: moved %d, %v", n, moved, err)
		}
		if got := everything(t, tb); !sameRows(got, want) {
			t.Errorf("after Reshard to %d: %v, want %v", n, got, want)
		}
		if err := tb.CheckShards(context.Background()); err != nil {
			t.Errorf("CheckShards with %d after Reshard: %v", n, err)
		}
		if again, err := tb.Reshard(context.Background()); again != 0 || err != nil {
			t.Errorf("Reshard to %d again: moved %d, %v; want none", n, again, err)
		}
	}
	if err := four.CheckShards(context.Background()); !errors.Is(err, dynamo.ErrShardMismatch) {
		t.Errorf("CheckShards with the old count: %v, want a mismatch", err)
	}
}

// hooked is an API whose UpdateItem calls before first, unless it returns an
// error.
type hooked struct {
	dynamo.API
	before func(in *dynamodb.UpdateItemInput) error
}

func (h hooked) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := h.before(in); err != nil {
		return nil, err
	}
	return h.API.UpdateItem(ctx, in, o...)
}

// keyOf is the key of the item in updates.
func keyOf(in *dynamodb.UpdateItemInput) string {
	key, _ := in.Key["key"].(*types.AttributeValueMemberS)
	return key.Value
}

func isMove(in *dynamodb.UpdateItemInput) bool {
	return aws.ToString(in.UpdateExpression) == "SET #shard = :to"
}

// TestAnInterruptedReshardIsFinishedByTheNext: a Reshard that fails after some
// moves leaves the rows it had not moved where the next one reads them.
func TestAnInterruptedReshardIsFinishedByTheNext(t *testing.T) {
	client, name := newTable(t)
	four, err := dynamo.New(client, name, kinds, dynamo.WithShards(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := four.CheckShards(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := fill(t, four)
	moves := 0
	failing := hooked{API: client, before: func(in *dynamodb.UpdateItemInput) error {
		if isMove(in) {
			if moves++; moves > 3 {
				return errors.New("connection lost")
			}
		}
		return nil
	}}
	one, err := dynamo.New(failing, name, kinds, dynamo.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := one.Reshard(context.Background()); err == nil || moved != 3 {
		t.Fatalf("the interrupted Reshard: moved %d, %v; want 3 and the error", moved, err)
	}
	one, err = dynamo.New(client, name, kinds, dynamo.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := one.Reshard(context.Background()); err != nil || moved == 0 {
		t.Fatalf("the next Reshard: moved %d, %v", moved, err)
	}
	if got := everything(t, one); !sameRows(got, want) {
		t.Errorf("after the next Reshard: %v, want %v", got, want)
	}
}

// TestARowSettledWhileReshardingStaysSettled: a row settled between Reshard's
// reading it and moving it is not moved, so it does not come back.
func TestARowSettledWhileReshardingStaysSettled(t *testing.T) {
	client, name := newTable(t)
	four, err := dynamo.New(client, name, kinds, dynamo.WithShards(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := four.CheckShards(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := fill(t, four)
	var settled []string
	var one *dynamo.Table
	settling := hooked{API: client, before: func(in *dynamodb.UpdateItemInput) error {
		if !isMove(in) {
			return nil
		}
		subject, isInvoice := strings.CutPrefix(keyOf(in), "invoice#")
		if !isInvoice {
			return nil // a reminder's row
		}
		settled = append(settled, subject)
		return one.Apply(context.Background(), rec("InvoicePaid", subject, 3, t0))
	}}
	one, err = dynamo.New(settling, name, kinds, dynamo.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	moved, err := one.Reshard(context.Background())
	if err != nil || len(settled) == 0 {
		t.Fatalf("Reshard: moved %d, %v, settling %v on the way", moved, err, settled)
	}
	got := everything(t, one)
	for _, k := range []string{"invoice", "collection"} {
		want[k] = slices.DeleteFunc(want[k], func(row string) bool {
			return slices.ContainsFunc(settled, func(s string) bool { return strings.HasPrefix(row, s+"@") })
		})
	}
	if !sameRows(got, want) {
		t.Errorf("after Reshard, %v settled on the way: %v, want %v", settled, got, want)
	}
}
