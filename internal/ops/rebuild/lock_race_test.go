package rebuild_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
)

// beforeFirstWrite runs hook once, just before the first write (PutItem or
// UpdateItem) its client sends: whatever the caller read before, another writer
// then gets in between.
type beforeFirstWrite struct {
	*dynamodb.Client
	once sync.Once
	hook func()
}

func (b *beforeFirstWrite) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	b.once.Do(b.hook)
	return b.Client.PutItem(ctx, in, o...)
}

func (b *beforeFirstWrite) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	b.once.Do(b.hook)
	return b.Client.UpdateItem(ctx, in, o...)
}

// TestTakingTheLockKeepsAPauseWrittenJustBefore: B is about to take the lock when A
// takes it, pauses the sweep and dies; once A's lease is over, B's take-over
// inherits that pause, whatever B saw of the lock earlier. A take-over that
// decided from an earlier read would drop the pause, and the sweep would stay
// disabled with nothing left to say so.
func TestTakingTheLockKeepsAPauseWrittenJustBefore(t *testing.T) {
	ctx := context.Background()
	db := emulatortest.DynamoDB(t)
	table := newTable(t, db)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func(d time.Duration) func() time.Time { return func() time.Time { return start.Add(d) } }
	slow := &beforeFirstWrite{Client: db, hook: func() {
		a, err := rebuild.Acquire(ctx, db, table, "rebuild-a", time.Minute, clock(0))
		if err != nil {
			t.Error(err)
			return
		}
		if err := a.Paused(ctx, true); err != nil {
			t.Error(err)
		}
	}}
	b, err := rebuild.Acquire(ctx, slow, table, "rebuild-b", time.Minute, clock(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: rebuild.LockKey}}})
	if err != nil {
		t.Fatal(err)
	}
	paused, _ := out.Item["pausedSweep"].(*types.AttributeValueMemberBOOL)
	owner, _ := out.Item["owner"].(*types.AttributeValueMemberS)
	if !b.Inherited || paused == nil || !paused.Value || owner == nil || owner.Value != "rebuild-b" {
		t.Fatalf("B took the lock over (inherited %v), the item %v: want B the owner, with A's pause kept for it to undo", b.Inherited, out.Item)
	}
}
