package rentalcost

import (
	"context"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
)

// deadlinesIndex names the Deadlines table's index, which the sweep queries.
var deadlinesIndex = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].IndexName)

// table is the Deadlines table as the bench reads it, item by item, to know what
// its rows must cost: its key attribute and its index as its definition gives them
// (deadlinetable.Definition).
type table struct {
	db    *dynamodb.Client
	name  string
	key   string
	index capacity.Index
}

func tableOf(db *dynamodb.Client, name string) table {
	def := deadlinetable.Definition(name)
	x := def.GlobalSecondaryIndexes[0]
	index := capacity.Index{Name: aws.ToString(x.IndexName), Projection: x.Projection.ProjectionType, NonKey: x.Projection.NonKeyAttributes}
	for _, k := range x.KeySchema {
		index.Keys = append(index.Keys, aws.ToString(k.AttributeName))
	}
	return table{db: db, name: name, key: aws.ToString(def.KeySchema[0].AttributeName), index: index}
}

// item reads the item at key, strongly consistently: nil if there is none.
func (t table) item(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := t.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(t.name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{t.key: &types.AttributeValueMemberS{Value: key}},
	})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// settled reports whether item is a settled row's marker: there, and out of the
// index.
func (t table) settled(item map[string]types.AttributeValue) bool {
	_, indexed := item[t.index.Keys[0]]
	return len(item) > 0 && !indexed
}

// entry is the index entry of item while it was an outstanding row of kind k, in
// the kind's first shard: a marker keeps its due time, not its partition of the
// index, which is the kind's name, "#" and the shard.
func (t table) entry(item map[string]types.AttributeValue, k deadlines.Kind) map[string]types.AttributeValue {
	outstanding := maps.Clone(item)
	outstanding[t.index.Keys[0]] = &types.AttributeValueMemberS{Value: k.Name + "#0"}
	return t.index.Entry(outstanding, []string{t.key})
}
