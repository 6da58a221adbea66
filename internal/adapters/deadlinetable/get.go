package deadlinetable

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
)

// Get returns the outstanding payment with the given reference, with a strongly
// consistent read of its row; ok is false when the payment is not outstanding (never
// projected, or settled).
func (p *Projection) Get(ctx context.Context, reference string) (row deadlinekinds.Pending, ok bool, err error) {
	out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(p.table),
		Key:                      map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: reference}},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#ref, #at, #shard"),
		ExpressionAttributeNames: map[string]string{"#ref": schema.DeadlineKey, "#at": schema.DeadlineDueAt, "#shard": schema.DeadlineKindShard},
	})
	if err != nil {
		return deadlinekinds.Pending{}, false, fmt.Errorf("deadline: read pending payment %s: %w", reference, err)
	}
	if shard, pending := out.Item[schema.DeadlineKindShard].(*types.AttributeValueMemberS); !pending || !strings.HasPrefix(shard.Value, deadline.LaneOf(deadlinekinds.Payment).Prefix) {
		return deadlinekinds.Pending{}, false, nil // absent, or a settled payment's marker
	}
	k, err := p.paymentKind()
	if err != nil {
		return deadlinekinds.Pending{}, false, err
	}
	r, err := p.decodeRow(k)(out.Item)
	if err != nil {
		return deadlinekinds.Pending{}, false, err
	}
	return deadlinekinds.Pending{Reference: reference, RentalID: r.Subject, PreparedAt: r.Since}, true, nil
}

// Row implements deadline.Index: a strongly consistent read of the row's item;
// ok is false for none, or a settled row's marker.
func (p *Projection) Row(ctx context.Context, k deadline.Kind, subject string) (deadline.Row, bool, error) {
	key := k.Key(subject)
	out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(p.table),
		Key:                      map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: key}},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#ref, #at, #shard"),
		ExpressionAttributeNames: map[string]string{"#ref": schema.DeadlineKey, "#at": schema.DeadlineDueAt, "#shard": schema.DeadlineKindShard},
	})
	if err != nil {
		return deadline.Row{}, false, fmt.Errorf("deadline: read %s row %s: %w", k.Name, key, err)
	}
	shard, pending := out.Item[schema.DeadlineKindShard].(*types.AttributeValueMemberS)
	if !pending || strings.TrimRight(shard.Value, "0123456789") != k.Lane().Prefix {
		return deadline.Row{}, false, nil // absent, a settled row's marker, or another kind's row
	}
	_, ms, err := stamped(out.Item, k.Name+" row")
	if err != nil {
		return deadline.Row{}, false, err
	}
	since := k.SinceOf(ms)
	return deadline.Row{Kind: k.Name, Subject: subject, Since: since, Due: k.DueAt(since)}, true, nil
}
