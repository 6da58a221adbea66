package deadlinecost

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

// TestTheDesignsWriteTheTablesAttributes checks the names the designs write the
// Deadlines table's items with against what the table itself writes: an
// outstanding row in the partition of its kind and shard, a settled one a marker
// with how it settled and when it expires.
func TestTheDesignsWriteTheTablesAttributes(t *testing.T) {
	ctx := context.Background()
	b, err := Start(ctx, emulatortest.Config(t), emulatortest.TableName(t, "attrs"), []Design{Today{}})
	if err != nil {
		t.Fatal(err)
	}
	e := b.Env(Today{})
	stuck, _ := e.Kinds.ByName(deadlinekinds.Stuck)
	item := func(subject string) map[string]types.AttributeValue {
		t.Helper()
		out, err := e.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{attrKey: str(stuck.Key(subject))}})
		if err != nil || out.Item == nil {
			t.Fatalf("the process stuck's row of %s: %v, %v", subject, out, err)
		}
		return out.Item
	}

	_, settled, err := b.Measure(ctx, Today{}, rentalcost.Rejected)
	if err != nil {
		t.Fatal(err)
	}
	marker := item(settled.ID)
	for _, a := range []string{attrKey, attrSubject, attrDueAt, attrSettled, attrExpiresAt} {
		if _, ok := marker[a]; !ok {
			t.Errorf("the marker %v has no %s", marker, a)
		}
	}
	if _, ok := marker[attrKindShard]; ok {
		t.Errorf("the marker %v is still in the index", marker)
	}

	id := b.NewRental()
	bike, _ := rental.BikeIDOf(id)
	if _, err := newAppender(b.store).add(ctx, eventsOf(rentalcost.Rejected, bike, id)[:1], func(r eventstore.Record) error {
		return Today{}.Project(ctx, e, r)
	}); err != nil {
		t.Fatal(err)
	}
	row := item(id)
	if got, ok := row[attrKindShard].(*types.AttributeValueMemberS); !ok || got.Value != e.partitionOf(stuck, id) {
		t.Errorf("the outstanding row %v is not in partition %s", row, e.partitionOf(stuck, id))
	}
	if _, ok := row[attrDueAt]; !ok {
		t.Errorf("the outstanding row %v has no %s", row, attrDueAt)
	}
}
