package rebuild_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
)

// TestOneRebuildAtATime takes the lock, refuses a second holder, lets the lock
// expire with the sweep paused, and shows the next holder inheriting the pause,
// the expired holder unable to change or release what it lost, and the table's sweep index
// untouched by the lock.
func TestOneRebuildAtATime(t *testing.T) {
	ctx := context.Background()
	db := emulatortest.DynamoDB(t)
	table := newTable(t, db)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func(d time.Duration) func() time.Time { return func() time.Time { return start.Add(d) } }

	a, err := rebuild.Acquire(ctx, db, table, "rebuild-a", time.Minute, clock(0))
	if err != nil || a.Inherited {
		t.Fatalf("first acquire: %+v, %v", a, err)
	}
	var locked *rebuild.LockedError
	if _, err := rebuild.Acquire(ctx, db, table, "rebuild-b", time.Minute, clock(30*time.Second)); !errors.As(err, &locked) ||
		locked.Owner != "rebuild-a" || !locked.Expires.Equal(start.Add(time.Minute)) {
		t.Fatalf("second acquire while held: %v", err)
	}
	if err := a.Paused(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	// a stops renewing (interrupted): once its lease is over, b takes the lock and
	// with it the sweep's pause, which a never undid.
	b, err := rebuild.Acquire(ctx, db, table, "rebuild-b", time.Minute, clock(2*time.Minute))
	if err != nil || !b.Inherited {
		t.Fatalf("acquire after the lease: %+v, %v; want the pause inherited", b, err)
	}
	if err := a.Paused(ctx, false); !errors.Is(err, rebuild.ErrLocked) || !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("the expired holder changed the lock: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("the expired holder released the lock: %v", err)
	}
	if err := b.Renew(ctx); err != nil {
		t.Errorf("the holder lost the lock to the expired one: %v", err)
	}
	kinds := deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{})
	projection, err := deadlinetable.New(db, table, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if page, err := deadlines.List(ctx, projection, kinds, deadlines.Query{Limit: 10}); err != nil || len(page.Rows) != 0 {
		t.Errorf("the sweep's index lists %v (%v), want nothing: the lock is no row of any kind", page.Rows, err)
	}
	if err := b.Paused(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := rebuild.Acquire(ctx, db, table, "rebuild-c", time.Minute, clock(3*time.Minute))
	if err != nil || c.Inherited {
		t.Fatalf("acquire after a release: %+v, %v; want a fresh lock", c, err)
	}
}

// TestALockKeepsItsPauseForTheNextRebuild shows the lock item without the table's
// TTL attribute, so that DynamoDB never deletes a pause that a rebuild which lost
// its lock left for the next one, and a lock written the way it was before, its
// lease in the TTL attribute, refused until that has passed and then taken over
// with its pause.
func TestALockKeepsItsPauseForTheNextRebuild(t *testing.T) {
	ctx := context.Background()
	db := emulatortest.DynamoDB(t)
	table := newTable(t, db)
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func(d time.Duration) func() time.Time { return func() time.Time { return start.Add(d) } }
	key := map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: rebuild.LockKey}}
	item := func() map[string]types.AttributeValue {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}

	a, err := rebuild.Acquire(ctx, db, table, "rebuild-a", time.Minute, clock(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Paused(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := item()[ttlAttr]; ok {
		t.Errorf("the lock %v carries the TTL attribute: DynamoDB would delete its pause", item())
	}

	legacy := map[string]types.AttributeValue{
		keyAttr:       key[keyAttr],
		"owner":       &types.AttributeValueMemberS{Value: "an older rebuild"},
		ttlAttr:       &types.AttributeValueMemberN{Value: strconv.FormatInt(start.Add(time.Minute).Unix(), 10)},
		"pausedSweep": &types.AttributeValueMemberBOOL{Value: true},
	}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: legacy}); err != nil {
		t.Fatal(err)
	}
	var locked *rebuild.LockedError
	if _, err := rebuild.Acquire(ctx, db, table, "rebuild-b", time.Minute, clock(30*time.Second)); !errors.As(err, &locked) ||
		locked.Owner != "an older rebuild" || !locked.Expires.Equal(start.Add(time.Minute)) {
		t.Fatalf("acquire while an older rebuild holds the lock: %v", err)
	}
	b, err := rebuild.Acquire(ctx, db, table, "rebuild-b", time.Minute, clock(2*time.Minute))
	if err != nil || !b.Inherited {
		t.Fatalf("acquire after the older rebuild's lease: %+v, %v; want its pause inherited", b, err)
	}
	if _, ok := item()[ttlAttr]; ok {
		t.Errorf("the lock taken over %v still carries the TTL attribute", item())
	}
}

// keyAttr and ttlAttr are the Deadlines table's key and TTL attributes.
var (
	keyAttr = aws.ToString(deadlinetable.Definition("").KeySchema[0].AttributeName)
	ttlAttr = aws.ToString(deadlinetable.TTL("").TimeToLiveSpecification.AttributeName)
)

// newTable creates a Deadlines table of the test's own.
func newTable(t *testing.T, db *dynamodb.Client) string {
	t.Helper()
	return emulatortest.CreateTable(t, db, deadlinetable.Definition, "deadlines")
}

func TestALeaseTooShortIsRefused(t *testing.T) {
	for _, lease := range []time.Duration{-time.Minute, time.Nanosecond, rebuild.MinLease - time.Millisecond} {
		if l, err := rebuild.Acquire(context.Background(), nil, "pending", "rebuild-a", lease, nil); err == nil || l != nil {
			t.Errorf("a lease of %s: %+v, %v; want it refused", lease, l, err)
		}
	}
}
