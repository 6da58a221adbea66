package pendingtable

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
)

// Get returns the outstanding payment with the given reference, with a strongly
// consistent read of its row; ok is false when the payment is not outstanding (never
// projected, or settled).
func (p *Projection) Get(ctx context.Context, reference string) (row deadline.Pending, ok bool, err error) {
	out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(p.table),
		Key:                      map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: reference}},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#ref, #at, #shard"),
		ExpressionAttributeNames: map[string]string{"#ref": schema.PendingReference, "#at": schema.PendingPreparedAt, "#shard": schema.PendingDueShard},
	})
	if err != nil {
		return deadline.Pending{}, false, fmt.Errorf("deadline: read pending payment %s: %w", reference, err)
	}
	if _, pending := out.Item[schema.PendingDueShard]; !pending {
		return deadline.Pending{}, false, nil // absent, or a settled payment's marker
	}
	row, err = decodePending(out.Item)
	if err != nil {
		return deadline.Pending{}, false, err
	}
	return row, true, nil
}
