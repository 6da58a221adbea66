package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
)

// Rows implements deadlines.Index: one Query of the index partition of
// span.Kind's rows in span.Shard, with the span's bounds in its key condition,
// span.Page items a page (DynamoDB's own pages for 0), soonest due first. The
// partition holds that kind's outstanding rows alone, so every item it reads is a
// row it passes on; it returns the items DynamoDB says it read (ScannedCount).
// Rows due in the same millisecond come in the index's order. A kind the table
// was not made with, or a shard out of range, is an error.
func (t *Table) Rows(ctx context.Context, span deadlines.Span, fn func([]deadlines.Row) bool) (int, error) {
	k := span.Kind
	if _, ok := t.kinds.ByName(k.Name); !ok {
		return 0, fmt.Errorf("dynamo: rows of kind %q: not one of the table's kinds %q", k.Name, t.kinds.Names())
	}
	if span.Shard < 0 || span.Shard >= t.shards {
		return 0, fmt.Errorf("dynamo: rows of shard %d: want 0 to %d", span.Shard, t.shards-1)
	}
	in, empty := t.query(k.Name, span)
	if empty {
		return 0, nil
	}
	read := 0
	pages := dynamodb.NewQueryPaginator(t.client, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return read, fmt.Errorf("dynamo: query %s: %w", partition(k.Name, span.Shard), err)
		}
		read += int(page.ScannedCount)
		rows := make([]deadlines.Row, 0, len(page.Items))
		for _, item := range page.Items {
			row, err := decode(k, item)
			if err != nil {
				return read, err
			}
			rows = append(rows, row)
		}
		if len(rows) > 0 && !fn(rows) {
			break
		}
	}
	return read, nil
}

// query is the Query of span's rows of the kind named kind, or empty when the
// span holds no millisecond. Due times are whole milliseconds: a row is due from
// span.From when its millisecond is From's or later, and before span.Before when
// it is before Before's, rounded up.
func (t *Table) query(kind string, span deadlines.Span) (in *dynamodb.QueryInput, empty bool) {
	cond := "#shard = :shard"
	names := map[string]string{"#shard": attrKindShard}
	values := map[string]types.AttributeValue{":shard": str(partition(kind, span.Shard))}
	from, before := ceilMilli(span.From), ceilMilli(span.Before)
	switch {
	case !span.From.IsZero() && !span.Before.IsZero():
		if from >= before {
			return nil, true
		}
		cond += " AND #due BETWEEN :from AND :last"
		values[":from"], values[":last"] = num(from), num(before-1)
	case !span.From.IsZero():
		cond += " AND #due >= :from"
		values[":from"] = num(from)
	case !span.Before.IsZero():
		cond += " AND #due < :before"
		values[":before"] = num(before)
	}
	if len(values) > 1 {
		names["#due"] = attrDueAt
	}
	in = &dynamodb.QueryInput{
		TableName:                 aws.String(t.table),
		IndexName:                 aws.String(indexName),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(true),
	}
	if span.Page > 0 {
		in.Limit = aws.Int32(int32(min(span.Page, 1<<30)))
	}
	return in, false
}

// ceilMilli is t in Unix milliseconds, rounded up.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli() // rounded down: a time's nanoseconds are never negative
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return ms
}

// decode reads an item of k's index partitions.
func decode(k deadlines.Kind, item map[string]types.AttributeValue) (deadlines.Row, error) {
	key, _ := item[attrKey].(*types.AttributeValueMemberS)
	due, _ := item[attrDueAt].(*types.AttributeValueMemberN)
	if key == nil || due == nil {
		return deadlines.Row{}, fmt.Errorf("dynamo: a %s row without %s or %s: %v", k.Name, attrKey, attrDueAt, item)
	}
	ms, err := strconv.ParseInt(due.Value, 10, 64)
	if err != nil {
		return deadlines.Row{}, fmt.Errorf("dynamo: %s row %s: %s %q", k.Name, key.Value, attrDueAt, due.Value)
	}
	subject, ok := k.SubjectOf(key.Value)
	if !ok {
		return deadlines.Row{}, fmt.Errorf("dynamo: %s row %s: not a key of its kind", k.Name, key.Value)
	}
	return deadlines.Row{Kind: k.Name, Subject: subject, Due: time.UnixMilli(ms).UTC()}, nil
}

// Row implements deadlines.Index: a strongly consistent GetItem of the row's
// item, outstanding when it is in k's partitions of the index (not a marker, not
// another kind's row at the same key).
func (t *Table) Row(ctx context.Context, k deadlines.Kind, subject string) (deadlines.Row, bool, error) {
	key := k.Key(subject)
	out, err := t.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(t.table),
		Key:                      itemKey(key),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#key, #due, #shard"),
		ExpressionAttributeNames: map[string]string{"#key": attrKey, "#due": attrDueAt, "#shard": attrKindShard},
	})
	if err != nil {
		return deadlines.Row{}, false, fmt.Errorf("dynamo: read %s row %s: %w", k.Name, key, err)
	}
	shard, _ := out.Item[attrKindShard].(*types.AttributeValueMemberS)
	if shard == nil || !strings.HasPrefix(shard.Value, lane(k.Name)) {
		return deadlines.Row{}, false, nil
	}
	row, err := decode(k, out.Item)
	return row, err == nil, err
}
