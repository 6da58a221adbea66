package rebuild

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/schema"
)

// LockKey is the PendingPayments item a rebuild holds while it runs. It has no due
// shard, so it is never in the sweep's index, and it carries the table's TTL
// attribute, so that DynamoDB deletes the lock of an interrupted rebuild some time
// after it expired (expiry itself is decided by the lock's condition, not by TTL).
const LockKey = "#rebuild-lock"

// DefaultLease is how long a lock holds without being renewed.
const DefaultLease = 2 * time.Minute

// Lock item attributes, besides the table's key and TTL attribute.
const (
	lockOwner  = "owner"
	lockPaused = "pausedSweep" // BOOL: the holder paused the sweep and has not resumed it
)

// ErrLocked reports that another rebuild holds the lock.
var ErrLocked = errors.New("rebuild: another rebuild is running")

// LockedError is ErrLocked with who holds the lock and until when.
type LockedError struct {
	Owner   string
	Expires time.Time
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("rebuild: another rebuild (%s) holds the lock until %s", e.Owner, e.Expires.UTC().Format(time.RFC3339))
}

// Unwrap makes a LockedError match ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// LockAPI is the part of the DynamoDB client a Lock uses.
type LockAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Lock is a rebuild's hold on a PendingPayments table: while one rebuild holds it,
// another refuses to start, so that two rebuilds never pause and resume the sweep
// over each other. It is a conditional item with an owner and an expiry: the holder
// renews it, releases it when done, and an interrupted holder's lock expires.
type Lock struct {
	db    LockAPI
	table string
	owner string
	lease time.Duration
	now   func() time.Time
	// Inherited is true when the lock was taken over from a rebuild that expired
	// after pausing the sweep without resuming it: the new holder resumes it.
	Inherited bool
}

// Acquire takes the lock of table for owner, for lease (DefaultLease if zero), or
// returns a *LockedError while another owner holds an unexpired one.
func Acquire(ctx context.Context, db LockAPI, table, owner string, lease time.Duration, now func() time.Time) (*Lock, error) {
	if lease <= 0 {
		lease = DefaultLease
	}
	if now == nil {
		now = time.Now
	}
	l := &Lock{db: db, table: table, owner: owner, lease: lease, now: now}
	key := l.key()
	old, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("rebuild: read the lock: %w", err)
	}
	at := now()
	item := map[string]types.AttributeValue{
		schema.PendingReference: key[schema.PendingReference],
		lockOwner:               &types.AttributeValueMemberS{Value: owner},
		schema.PendingExpiresAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Add(lease).Unix(), 10)},
	}
	if paused, ok := old.Item[lockPaused].(*types.AttributeValueMemberBOOL); ok && paused.Value {
		item[lockPaused] = paused // an expired holder's pause is the new holder's to undo
		l.Inherited = true
	}
	_, err = db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(#ref) OR #exp < :now"),
		ExpressionAttributeNames:            map[string]string{"#ref": schema.PendingReference, "#exp": schema.PendingExpiresAt},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Unix(), 10)}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return nil, lockedBy(failed.Item)
	}
	if err != nil {
		return nil, fmt.Errorf("rebuild: take the lock: %w", err)
	}
	return l, nil
}

func lockedBy(item map[string]types.AttributeValue) error {
	e := &LockedError{Owner: "unknown"}
	if o, ok := item[lockOwner].(*types.AttributeValueMemberS); ok {
		e.Owner = o.Value
	}
	if x, ok := item[schema.PendingExpiresAt].(*types.AttributeValueMemberN); ok {
		if s, err := strconv.ParseInt(x.Value, 10, 64); err == nil {
			e.Expires = time.Unix(s, 0)
		}
	}
	return e
}

func (l *Lock) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{schema.PendingReference: &types.AttributeValueMemberS{Value: LockKey}}
}

// update changes the lock if l still holds it; a lock lost (expired and taken by
// another) is a *LockedError.
func (l *Lock) update(ctx context.Context, set, name, attribute string, value types.AttributeValue) error {
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table), Key: l.key(),
		UpdateExpression:                    aws.String(set),
		ConditionExpression:                 aws.String("#owner = :me"),
		ExpressionAttributeNames:            map[string]string{"#owner": lockOwner, name: attribute},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":me": &types.AttributeValueMemberS{Value: l.owner}, ":v": value},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return lockedBy(failed.Item)
	}
	return err
}

// Renew extends the lock by its lease from now.
func (l *Lock) Renew(ctx context.Context) error {
	return l.update(ctx, "SET #exp = :v", "#exp", schema.PendingExpiresAt,
		&types.AttributeValueMemberN{Value: strconv.FormatInt(l.now().Add(l.lease).Unix(), 10)})
}

// Paused records whether the holder has the sweep paused: a rebuild that takes over
// an expired lock with the sweep still paused resumes it.
func (l *Lock) Paused(ctx context.Context, paused bool) error {
	return l.update(ctx, "SET #paused = :v", "#paused", lockPaused, &types.AttributeValueMemberBOOL{Value: paused})
}

// Release gives the lock up; releasing a lock no longer held is a *LockedError
// (another rebuild took it over after it expired) and changes nothing.
func (l *Lock) Release(ctx context.Context) error {
	_, err := l.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(l.table), Key: l.key(),
		ConditionExpression:                 aws.String("#owner = :me"),
		ExpressionAttributeNames:            map[string]string{"#owner": lockOwner},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":me": &types.AttributeValueMemberS{Value: l.owner}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return lockedBy(failed.Item)
	}
	return err
}

// Hold renews the lock every third of its lease until ctx ends, and calls lost if
// a renewal finds the lock taken over.
func (l *Lock) Hold(ctx context.Context, lost func(error)) {
	t := time.NewTicker(l.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Renew(ctx); errors.Is(err, ErrLocked) {
				lost(err)
				return
			}
		}
	}
}
