package deadlinecost

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// OneRow keeps one row per rental in today's table, whose kind and due time move
// with the rental: opened in the process stuck's partitions by BikeRequested, moved
// into the payments' by PaymentPrepared (keeping the stuck due time aside), back by
// the payment's settlement, into the returns' by the approval, and settled (a
// marker, out of the index) by the completion or the return. Every move changes
// the index key: one write and two index writes.
type OneRow struct{}

func (OneRow) Name() string                                  { return "one row per rental, its kind and due time moving" }
func (OneRow) Short() string                                 { return "onerow" }
func (OneRow) Define(name string) *dynamodb.CreateTableInput { return deadlinetable.Definition(name) }

func (OneRow) Outstanding(ctx context.Context, e *Env, subject string) ([]string, error) {
	return indexed(ctx, e, subject)
}

// The attributes of the rental's row that only this design has.
const (
	stuckDueAttr = "stuckDueAtMs"   // N: when the process is stuck, while the row is another kind's
	paidAttr     = "paymentSettled" // S: set once the payment settled, so that a replayed PaymentPrepared never moves the row back
)

func (OneRow) Project(ctx context.Context, e *Env, r eventstore.Record) error {
	changes, err := e.changes(r)
	if err != nil {
		return err
	}
	var marked []string
	for _, c := range changes {
		stuck, _ := e.Kinds.ByName(deadlinekinds.Stuck)
		key := stuck.Key(c.Subject)
		if c.Settled && c.Kind.Name != deadlinekinds.Payment {
			if slices.Contains(marked, key) {
				continue
			}
			marked = append(marked, key)
		}
		if err := oneRowChange(ctx, e, stuck, key, c, r); err != nil {
			return err
		}
	}
	return nil
}

// oneRowChange writes what change c of record r does to the rental's row at key.
func oneRowChange(ctx context.Context, e *Env, stuck deadlines.Kind, key string, c deadlines.KindChange, r eventstore.Record) error {
	names := map[string]string{
		"#ref": attrKey, "#rental": attrSubject, "#shard": attrKindShard,
		"#at": attrDueAt, "#stuckDue": stuckDueAttr,
	}
	due := ms(c.Kind.DueAt(c.Change, r.RecordedAt))
	values := map[string]types.AttributeValue{":rental": str(c.Subject), ":shard": str(e.partitionOf(c.Kind, c.Subject)), ":due": due}
	stuckLane := map[string]types.AttributeValue{":stuckLane": str(lane(stuck.Name))}
	var cond, set string
	switch {
	case c.Kind.Name == deadlinekinds.Stuck && !c.Settled:
		cond, set = "attribute_not_exists(#ref)", "SET #rental = :rental, #shard = :shard, #at = :due, #stuckDue = :due"
	case c.Kind.Name == deadlinekinds.Payment && !c.Settled:
		// PaymentPrepared may be projected before BikeRequested (another stream):
		// then it opens the row, with the stuck due time reckoned from its own time.
		names["#paid"] = paidAttr
		values[":stuckDue"] = ms(stuck.DueAt(deadlines.Change{}, r.RecordedAt))
		maps.Copy(values, stuckLane)
		cond = "(attribute_not_exists(#ref) OR begins_with(#shard, :stuckLane)) AND attribute_not_exists(#paid)"
		set = "SET #rental = :rental, #shard = :shard, #at = :due, #stuckDue = if_not_exists(#stuckDue, :stuckDue)"
	case c.Kind.Name == deadlinekinds.Payment:
		names = map[string]string{"#shard": attrKindShard, "#at": attrDueAt, "#stuckDue": stuckDueAttr, "#paid": paidAttr}
		values = map[string]types.AttributeValue{":payLane": str(lane(c.Kind.Name)), ":shard": str(e.partitionOf(stuck, c.Subject)), ":paid": str(c.How)}
		cond, set = "begins_with(#shard, :payLane)", "SET #shard = :shard, #at = #stuckDue, #paid = :paid"
	case c.Kind.Takes == deadlinekinds.Stuck && !c.Settled:
		delete(names, "#ref")
		delete(names, "#stuckDue")
		maps.Copy(values, stuckLane)
		cond, set = "begins_with(#shard, :stuckLane)", "SET #rental = :rental, #shard = :shard, #at = :due"
	case c.Settled:
		names = map[string]string{"#rental": attrSubject, "#settled": attrSettled, "#shard": attrKindShard}
		values = map[string]types.AttributeValue{":rental": str(c.Subject), ":settled": str(c.How)}
		set = "SET #rental = :rental, #settled = :settled REMOVE #shard"
	default:
		return fmt.Errorf("deadlinecost: one row per rental does not model %s opening %s", r.Type, c.Kind.Name)
	}
	return update(ctx, e, key, cond, set, names, values)
}
