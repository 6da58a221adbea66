package deadlinecost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Today is the Deadlines table as it is (docs/decisions/0026-a-deadlines-table.md),
// written by the deadlines module's Table: a row per deadline keyed by kind and
// subject, in the keys-only DueByKind index while outstanding; a settlement leaves a
// marker out of the index (deleted by TTL, at no write cost), which a replayed
// opening's conditional write finds.
type Today struct{}

func (Today) Name() string                                  { return "today's table: the DueByKind index, settled rows kept as markers" }
func (Today) Short() string                                 { return "today" }
func (Today) Define(name string) *dynamodb.CreateTableInput { return deadlinetable.Definition(name) }

func (Today) Project(ctx context.Context, e *Env, r eventstore.Record) error {
	return projection(e).Apply(ctx, dynamo.RecordOf(r))
}

func (Today) Outstanding(ctx context.Context, e *Env, subject string) ([]string, error) {
	return indexed(ctx, e, subject)
}

// projection is the Deadlines table of the service's kinds, on e.
func projection(e *Env) *deadlinetable.Table {
	t, err := deadlinetable.New(e.Client, e.Table, e.Kinds, deadlinetable.WithShards(e.Shards))
	if err != nil {
		panic(err) // e's settings are the defaults
	}
	return t
}

// Deleted is today's table with every settlement a DeleteItem: no marker is left,
// so what keeps a replayed opening from bringing the row back is a read of the
// event store before the write (the streams that settle the kind: a settling
// record there means the row must not open). The openings and the takeover are
// the service's own conditional writes.
type Deleted struct{}

func (Deleted) Name() string {
	return "settled rows deleted, openings guarded by a read of the event store"
}
func (Deleted) Short() string                                 { return "deleted" }
func (Deleted) Define(name string) *dynamodb.CreateTableInput { return deadlinetable.Definition(name) }

func (Deleted) Project(ctx context.Context, e *Env, r eventstore.Record) error {
	changes, err := e.changes(r)
	if err != nil || len(changes) == 0 {
		return err
	}
	if changes[0].Settled {
		return settleEach(ctx, e, changes, func(key string) error { return deleteKey(ctx, e, key) })
	}
	rd := newReads(e)
	for _, c := range changes {
		if settled, err := rd.settled(ctx, c.Kind, c.Subject); err != nil || settled {
			return err
		}
	}
	e.between(ctx)
	return projection(e).Apply(ctx, dynamo.RecordOf(r))
}

func (Deleted) Outstanding(ctx context.Context, e *Env, subject string) ([]string, error) {
	return indexed(ctx, e, subject)
}

// Expired is today's table with every settlement a mark on the row that leaves its
// index entry in place (one write unit: the index projects keys only and no key
// changes), and TTL, which bills no write, deleting the row later; the sweep and
// the listings read settled rows until then.
type Expired struct{}

func (Expired) Name() string                                  { return "settled rows marked in place, their index entries left to TTL" }
func (Expired) Short() string                                 { return "expired" }
func (Expired) Define(name string) *dynamodb.CreateTableInput { return deadlinetable.Definition(name) }

func (Expired) Project(ctx context.Context, e *Env, r eventstore.Record) error {
	changes, err := e.changes(r)
	if err != nil || len(changes) == 0 {
		return err
	}
	if !changes[0].Settled {
		return projection(e).Apply(ctx, dynamo.RecordOf(r))
	}
	expires := strconv.FormatInt(r.RecordedAt.Add(deadlinetable.DefaultMarkerTTL).Unix(), 10)
	return settleEach(ctx, e, changes, func(key string) error {
		return update(ctx, e, key, "", "SET #settled = :settled, #exp = :exp",
			map[string]string{"#settled": attrSettled, "#exp": attrExpiresAt},
			map[string]types.AttributeValue{":settled": str(changes[0].How), ":exp": num(expires)})
	})
}

func (Expired) Outstanding(ctx context.Context, e *Env, subject string) ([]string, error) {
	return indexed(ctx, e, subject)
}

// settleEach calls settle once for each key the settling changes name (kinds that
// share a key share its settlement).
func settleEach(ctx context.Context, e *Env, changes []deadlines.KindChange, settle func(key string) error) error {
	var done []string
	for _, c := range changes {
		if !c.Settled {
			return fmt.Errorf("deadlinecost: a record that settles %s also opens %s", changes[0].Kind.Name, c.Kind.Name)
		}
		key := c.Kind.Key(c.Subject)
		if slices.Contains(done, key) {
			continue
		}
		done = append(done, key)
		if err := settle(key); err != nil {
			return err
		}
	}
	return nil
}

// indexed returns the kinds of subject's rows in the DueByKind index: one Query of
// every shard of every swept kind, as the sweep reads it.
func indexed(ctx context.Context, e *Env, subject string) ([]string, error) {
	var kinds []string
	for _, k := range e.Kinds.Swept() {
		for s := range e.Shards {
			out, err := e.Client.Query(ctx, &dynamodb.QueryInput{
				TableName: aws.String(e.Table), IndexName: aws.String(indexName),
				KeyConditionExpression:    aws.String("#shard = :shard"),
				ExpressionAttributeNames:  map[string]string{"#shard": attrKindShard},
				ExpressionAttributeValues: map[string]types.AttributeValue{":shard": str(partition(k.Name, s))},
			})
			if err != nil {
				return nil, err
			}
			kinds = append(kinds, kindsOf(e, k, out.Items, subject)...)
		}
	}
	return kinds, nil
}

// kindsOf returns k's name once for each item of its partitions that is about
// subject.
func kindsOf(e *Env, k deadlines.Kind, items []map[string]types.AttributeValue, subject string) []string {
	var out []string
	for _, item := range items {
		key, _ := item[attrKey].(*types.AttributeValueMemberS)
		if key == nil {
			continue
		}
		if s, ok := e.subjectOf(key.Value); ok && s == subject {
			out = append(out, k.Name)
		}
	}
	return out
}

// update updates the row at key of e's table; a failed condition is no error (the
// row already reflects the record, or something later).
func update(ctx context.Context, e *Env, key, cond, set string, names map[string]string, values map[string]types.AttributeValue) error {
	in := &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table), Key: map[string]types.AttributeValue{attrKey: str(key)},
		UpdateExpression: aws.String(set), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	_, err := e.Client.UpdateItem(ctx, in)
	return conditionFailedIsDone(err)
}

func conditionFailedIsDone(err error) error {
	var failed *types.ConditionalCheckFailedException
	if err == nil || errors.As(err, &failed) {
		return nil
	}
	return err
}

func deleteKey(ctx context.Context, e *Env, key string) error {
	_, err := e.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(e.Table), Key: map[string]types.AttributeValue{attrKey: str(key)},
	})
	return err
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n string) types.AttributeValue { return &types.AttributeValueMemberN{Value: n} }
func ms(t time.Time) types.AttributeValue {
	return num(strconv.FormatInt(t.UnixMilli(), 10))
}
