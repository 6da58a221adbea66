package deadlinecost

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// OwnKey is a to-do table whose own key is the index: partition the row's kind and
// shard (the Deadlines table's kindShard, "payment#2"), sort key its due time and key
// (dueKeyAttr), no secondary index. A row costs one write to put and one to delete,
// with no index entry to keep; but its key holds its due time, so a settlement must
// learn the due time before it can delete the row: it reads the record that opened
// it from the event store. A replayed opening is kept from bringing a settled row
// back by a check after the put: a read of the streams that settle the kind (or,
// with Markers, of a marker the settlement writes before it deletes), and a delete
// of the row just put if it has settled. Put, then check: a settlement projected
// at the same time either comes before the check, which sees it, or after the put,
// and deletes the row.
type OwnKey struct {
	// Markers makes each settlement write a marker (its own item, in a partition
	// no reader of the list reads) before it deletes the row, and each opening check
	// the marker instead of the event store.
	Markers bool
}

// dueKeyAttr is the sort key of OwnKey's table: the due time (Unix milliseconds,
// zero-padded, so that the string sorts as the time) and the row's key.
const dueKeyAttr = "dueKey"

func (d OwnKey) Name() string {
	if d.Markers {
		return "the table's own key as the index, settled rows deleted after a marker, openings checked against the marker after the write"
	}
	return "the table's own key as the index, settled rows deleted, openings checked against the event store after the write"
}

func (d OwnKey) Short() string {
	if d.Markers {
		return "ownkey-marked"
	}
	return "ownkey"
}

func (OwnKey) Define(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrKindShard), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(dueKeyAttr), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrKindShard), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(dueKeyAttr), KeyType: types.KeyTypeRange},
		},
	}
}

func (d OwnKey) Project(ctx context.Context, e *Env, r eventstore.Record) error {
	changes, err := e.changes(r)
	if err != nil {
		return err
	}
	rd := newReads(e)
	for _, c := range changes {
		if c.Settled {
			err = d.settle(ctx, e, rd, c.Kind, c.Subject, r)
		} else {
			err = d.open(ctx, e, rd, c, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// open puts the row c opens, then checks that it has not settled already (deleting
// it if it has), then deletes the row of the kind it takes over.
func (d OwnKey) open(ctx context.Context, e *Env, rd *reads, c deadlines.KindChange, r eventstore.Record) error {
	k := c.Kind
	row := d.rowKey(e, k, c.Subject, k.DueAt(c.Change, r.RecordedAt))
	item := map[string]types.AttributeValue{attrKey: str(k.Key(c.Subject)), attrSubject: str(c.Subject)}
	maps.Copy(item, row)
	if _, err := e.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.Table), Item: item}); err != nil {
		return err
	}
	e.between(ctx)
	settled, err := d.settled(ctx, e, rd, k, c.Subject)
	if err != nil {
		return err
	}
	if settled {
		if err := d.delete(ctx, e, row); err != nil {
			return err
		}
	}
	if taken, ok := e.Kinds.ByName(k.Takes); ok {
		return d.settle(ctx, e, rd, taken, c.Subject, r)
	}
	return nil
}

// settle deletes k's row about subject, whose due time it reads from the record
// that opened it; with Markers, it writes the marker first. A row whose opening
// the event store does not hold (an overdue return never flagged) was never put.
func (d OwnKey) settle(ctx context.Context, e *Env, rd *reads, k deadlines.Kind, subject string, r eventstore.Record) error {
	due, err := rd.due(ctx, k, subject)
	if errors.Is(err, errNotOpened) {
		return nil // there is no row to delete
	}
	if err != nil {
		return err
	}
	if d.Markers {
		marker := d.markerKey(e, k, subject)
		marker[attrExpiresAt] = num(strconv.FormatInt(r.RecordedAt.Add(deadlinetable.DefaultMarkerTTL).Unix(), 10))
		if _, err := e.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(e.Table), Item: marker}); err != nil {
			return err
		}
	}
	return d.delete(ctx, e, d.rowKey(e, k, subject, due))
}

// settled reports whether k's row about subject has settled: from its marker, or
// from the event store.
func (d OwnKey) settled(ctx context.Context, e *Env, rd *reads, k deadlines.Kind, subject string) (bool, error) {
	if !d.Markers {
		return rd.settled(ctx, k, subject)
	}
	out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.Table), Key: d.markerKey(e, k, subject), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return false, err
	}
	return out.Item != nil, nil
}

// rowKey is the table key of k's row about subject, due at due.
func (OwnKey) rowKey(e *Env, k deadlines.Kind, subject string, due time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrKindShard: str(e.partitionOf(k, subject)),
		dueKeyAttr:    str(fmt.Sprintf("%013d#%s", due.UnixMilli(), k.Key(subject))),
	}
}

// markerKey is the table key of the marker of k's row about subject: a partition
// per shard that no listing or sweep reads, sorted by the kind's name and the key.
func (OwnKey) markerKey(e *Env, k deadlines.Kind, subject string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrKindShard: str(partition("settled", e.shardOf(subject))),
		dueKeyAttr:    str(lane(k.Name) + k.Key(subject)),
	}
}

func (OwnKey) delete(ctx context.Context, e *Env, key map[string]types.AttributeValue) error {
	_, err := e.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.Table), Key: key})
	return err
}

// Outstanding reads every shard of every swept kind of the table itself, one
// Query each.
func (OwnKey) Outstanding(ctx context.Context, e *Env, subject string) ([]string, error) {
	var kinds []string
	for _, k := range e.Kinds.Swept() {
		for s := range e.Shards {
			out, err := e.Client.Query(ctx, &dynamodb.QueryInput{
				TableName:                 aws.String(e.Table),
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
