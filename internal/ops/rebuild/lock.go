package rebuild

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
)

// LockKey is the Deadlines table's item a rebuild holds while it runs. It has no due
// shard, so it is never in the sweep's index. Its lease is an attribute of its own,
// not the table's TTL attribute: the lock of a rebuild that was interrupted or lost
// it stays until the next rebuild takes it over, because it may record the sweep as
// paused, and that pause is the next rebuild's to undo (TTL would delete it, and with
// it the only record that the sweep was paused by a rebuild and not by an operator).
// A lock released is deleted.
const LockKey = "#rebuild-lock"

// DefaultLease is how long a lock holds without being renewed.
const DefaultLease = 2 * time.Minute

// MinLease is the shortest lease Acquire takes: the lock stores its lease in whole
// seconds, and its holder renews it every quarter of it.
const MinLease = 2 * time.Second

// Lock item attributes, besides the table's key.
const (
	lockOwner  = "owner"
	lockLease  = "leaseUntil"  // N: Unix seconds; the lock is taken over once they have passed
	lockPaused = "pausedSweep" // BOOL: the holder paused the sweep and has not resumed it
)

// The Deadlines table's key attribute, and its TTL attribute, as deadlines/dynamo
// defines the table: a lock written before its lease had an attribute of its own
// kept the lease in the TTL attribute, and Acquire takes such a lock over once that
// has passed.
var (
	tableKey    = aws.ToString(deadlinetable.Definition("").KeySchema[0].AttributeName)
	legacyLease = aws.ToString(deadlinetable.TTL("").TimeToLiveSpecification.AttributeName)
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

// ErrLost reports that a rebuild no longer holds its lock: a write to the lock found
// it taken over, expired or gone, or the holder's lease ran out on its own clock
// without a successful renewal. A rebuild that lost its lock writes nothing more, and
// leaves the sweep's pause to the next holder.
var ErrLost = errors.New("rebuild: the lock was lost")

// LostError is ErrLost with why.
type LostError struct {
	// Reason is a *LockedError when another rebuild holds the lock, or what ended
	// the lease.
	Reason error
}

func (e *LostError) Error() string { return "rebuild: the lock was lost: " + e.Reason.Error() }

// Is makes a LostError match ErrLost.
func (e *LostError) Is(target error) bool { return target == ErrLost }

// Unwrap gives the reason: a lock lost to another rebuild matches ErrLocked too.
func (e *LostError) Unwrap() error { return e.Reason }

// LockAPI is the part of the DynamoDB client a Lock uses.
type LockAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// Lock is a rebuild's hold on a Deadlines table: while one rebuild holds it,
// another refuses to start, so that two rebuilds never pause and resume the sweep
// over each other. It is a conditional item with an owner and a lease: the holder
// renews it and releases it when done; the lock of a holder that was interrupted or
// lost it expires, and stays, with the pause it may record, until the next rebuild
// takes it over.
//
// # When a holder stops
//
// The expiry stored in the item is the holder's clock when it sent the write that
// set it, plus the lease, in whole seconds rounded down. DynamoDB may apply that
// write at any moment between its sending and its answer, so the holder counts its
// lease from the sending. Another rebuild takes the lock over once its own clock is
// past the stored second: not before sent + lease on the holder's clock, less the
// amount by which the taker's clock runs ahead of the holder's. The holder therefore
// keeps a local deadline of sent + lease - margin and considers the lock lost when
// its clock reaches it without a successful renewal; margin (a quarter of the lease,
// 30 seconds of the default two minutes) covers the skew between two hosts, which
// NTP keeps well under a second, and the time a write that passed the check takes to
// reach DynamoDB. The holder renews every quarter of the lease and retries a failed
// renewal every sixteenth of it, so a renewal failing for a reason that passes is
// retried several times before the deadline. The deadline is read on the holder's
// clock before every write it guards (Held, Fence), not only when the renewer wakes:
// a process that was suspended past its deadline notices before its next write.
// Once lost, a Lock stays lost.
//
// What the local deadline cannot cover is a holder suspended after its check and
// before its write reaches DynamoDB or the scheduler. The lock's own writes are
// conditional on the holder's unexpired ownership, so a late one changes nothing; a
// late write of the Deadlines table is as harmless as any repeated one (a record's
// writes are idempotent, a reshard's moves conditional on where the row was read);
// a late change of the schedule is the one effect left, in a window no longer than
// one call.
type Lock struct {
	db    LockAPI
	table string
	owner string
	lease time.Duration
	now   func() time.Time
	// Inherited is true when the lock was taken over from a rebuild that expired
	// after pausing the sweep without resuming it: the new holder resumes it.
	Inherited bool

	mu       sync.Mutex
	deadline time.Time // on the holder's clock: the lock is lost once it is reached
	lost     error     // a *LostError once lost, never cleared
	renewErr error     // the last renewal's failure, if the last renewal failed
	paused   bool      // the lock item records the sweep as paused by this holder
	cancel   context.CancelCauseFunc
}

// The margin and the renewal periods, as fractions of the lease: see Lock.
func margin(lease time.Duration) time.Duration     { return lease / 4 }
func renewEvery(lease time.Duration) time.Duration { return lease / 4 }
func retryEvery(lease time.Duration) time.Duration { return lease / 16 }

// Acquire takes the lock of table for owner, for lease (DefaultLease if zero, at
// least MinLease), or returns a *LockedError while another owner holds an unexpired
// one. now is the holder's clock (time.Now if nil).
func Acquire(ctx context.Context, db LockAPI, table, owner string, lease time.Duration, now func() time.Time) (*Lock, error) {
	switch {
	case lease == 0:
		lease = DefaultLease
	case lease < MinLease:
		return nil, fmt.Errorf("rebuild: a lease of %s: want at least %s", lease, MinLease)
	}
	if now == nil {
		now = time.Now
	}
	l := &Lock{db: db, table: table, owner: owner, lease: lease, now: now}
	at := now()
	// One conditional write takes the lock and keeps whatever pause an expired
	// holder left in it: the pause is inherited from the item as it was at that
	// write (ALL_OLD), never from an earlier read that another rebuild may have
	// overtaken since.
	out, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(table), Key: l.key(),
		UpdateExpression:         aws.String("SET #owner = :owner, #lease = :lease REMOVE #legacy"),
		ConditionExpression:      aws.String("attribute_not_exists(#ref) OR #lease < :now OR (attribute_not_exists(#lease) AND #legacy < :now)"),
		ExpressionAttributeNames: map[string]string{"#ref": tableKey, "#owner": lockOwner, "#lease": lockLease, "#legacy": legacyLease},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": &types.AttributeValueMemberS{Value: owner},
			":lease": &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Add(lease).Unix(), 10)},
			":now":   &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Unix(), 10)},
		},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return nil, lockedBy(failed.Item)
	}
	if err != nil {
		return nil, fmt.Errorf("rebuild: take the lock: %w", err)
	}
	if paused, ok := out.Attributes[lockPaused].(*types.AttributeValueMemberBOOL); ok && paused.Value {
		l.Inherited, l.paused = true, true // an expired holder's pause is the new holder's to undo
	}
	l.deadline = at.Add(lease - margin(lease))
	return l, nil
}

func lockedBy(item map[string]types.AttributeValue) *LockedError {
	e := &LockedError{Owner: "unknown"}
	if o, ok := item[lockOwner].(*types.AttributeValueMemberS); ok {
		e.Owner = o.Value
	}
	x, ok := item[lockLease].(*types.AttributeValueMemberN)
	if !ok {
		x, ok = item[legacyLease].(*types.AttributeValueMemberN)
	}
	if ok {
		if s, err := strconv.ParseInt(x.Value, 10, 64); err == nil {
			e.Expires = time.Unix(s, 0)
		}
	}
	return e
}

func (l *Lock) key() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tableKey: &types.AttributeValueMemberS{Value: LockKey}}
}

// held is the condition of every write of the holder: it owns the lock and its
// lease has not expired.
const held = "#owner = :me AND #lease >= :now"

func (l *Lock) heldValues(at time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":me":  &types.AttributeValueMemberS{Value: l.owner},
		":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Unix(), 10)},
	}
}

// Held returns nil while l holds the lock, and a *LostError (matching ErrLost) once
// it does not: a write to the lock found it taken over, expired or gone, or the
// holder's clock reached its local deadline without a successful renewal. Check it
// before every write the lock guards; it is safe to call from any goroutine.
func (l *Lock) Held() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost == nil && !l.now().Before(l.deadline) {
		reason := fmt.Errorf("its lease ran out at %s without a renewal", l.deadline.UTC().Format(time.RFC3339))
		if l.renewErr != nil {
			reason = fmt.Errorf("%w (the last renewal failed: %w)", reason, l.renewErr)
		}
		l.loseLocked(reason)
	}
	return l.lost
}

// lose records the lock lost for reason, unless it already was, and returns the
// *LostError.
func (l *Lock) lose(reason error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loseLocked(reason)
}

func (l *Lock) loseLocked(reason error) error {
	if l.lost == nil {
		l.lost = &LostError{Reason: reason}
		if l.cancel != nil {
			l.cancel(l.lost)
		}
	}
	return l.lost
}

// conditionFailed is the *LostError for a write of the holder whose condition
// failed: the lock is someone else's, expired, or gone.
func (l *Lock) conditionFailed(item map[string]types.AttributeValue) error {
	taker := lockedBy(item)
	switch {
	case item == nil:
		return l.lose(errors.New("the lock is gone"))
	case taker.Owner == l.owner:
		return l.lose(fmt.Errorf("its lease expired at %s", taker.Expires.UTC().Format(time.RFC3339)))
	}
	return l.lose(taker)
}

// update changes the lock if l still holds it. A lock found taken over, expired or
// gone is a *LostError, and so is any update once the lock is lost, which then
// sends nothing. It returns the time the update was sent, on the holder's clock.
func (l *Lock) update(ctx context.Context, set, name, attribute string, value func(sent time.Time) types.AttributeValue) (time.Time, error) {
	if err := l.Held(); err != nil {
		return time.Time{}, err
	}
	sent := l.now()
	values := l.heldValues(sent)
	values[":v"] = value(sent)
	_, err := l.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(l.table), Key: l.key(),
		UpdateExpression:                    aws.String(set),
		ConditionExpression:                 aws.String(held),
		ExpressionAttributeNames:            map[string]string{"#owner": lockOwner, "#lease": lockLease, name: attribute},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return sent, l.conditionFailed(failed.Item)
	}
	return sent, err
}

// Renew extends the lock by its lease from now, if l still holds it: a renewal that
// succeeds moves the local deadline (see Lock) on; one that finds the lock taken
// over, expired or gone is a *LostError.
func (l *Lock) Renew(ctx context.Context) error {
	sent, err := l.update(ctx, "SET #lease = :v", "#lease", lockLease, func(sent time.Time) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(sent.Add(l.lease).Unix(), 10)}
	})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := sent.Add(l.lease - margin(l.lease)); l.lost == nil && d.After(l.deadline) {
		l.deadline = d
	}
	l.renewErr = nil
	return nil
}

// Paused records whether the holder has the sweep paused: a rebuild that takes over
// an expired lock with the sweep still paused resumes it.
func (l *Lock) Paused(ctx context.Context, paused bool) error {
	_, err := l.update(ctx, "SET #paused = :v", "#paused", lockPaused, func(time.Time) types.AttributeValue {
		return &types.AttributeValueMemberBOOL{Value: paused}
	})
	if err == nil {
		l.mu.Lock()
		l.paused = paused
		l.mu.Unlock()
	}
	return err
}

// ErrStillPaused is what Release returns when the lock records the sweep as paused
// by its holder: the lock is left to expire, so that the next rebuild takes it over
// and resumes the sweep.
var ErrStillPaused = errors.New("rebuild: the sweep is still paused; the lock is left to expire, and the next rebuild resumes the sweep")

// Release gives the lock up. A lock lost is left alone (its expiry and the pause it
// records are the next holder's), and so is one that still records the sweep paused
// (ErrStillPaused); releasing a lock found taken over, expired or gone is a
// *LostError and changes nothing.
func (l *Lock) Release(ctx context.Context) error {
	if err := l.Held(); err != nil {
		return err
	}
	l.mu.Lock()
	paused := l.paused
	l.mu.Unlock()
	if paused {
		return ErrStillPaused
	}
	_, err := l.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(l.table), Key: l.key(),
		ConditionExpression:                 aws.String(held),
		ExpressionAttributeNames:            map[string]string{"#owner": lockOwner, "#lease": lockLease},
		ExpressionAttributeValues:           l.heldValues(l.now()),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return l.conditionFailed(failed.Item)
	}
	return err
}

// Hold keeps the lock for the work it guards: it returns a context derived from ctx
// for that work, and stop, which ends the holding and waits for its renewer. Until
// then it renews the lock every quarter of its lease and retries a failed renewal
// every sixteenth; the context is cancelled, with the *LostError as its cause, as
// soon as l is found lost: by a renewal that finds the lock taken over, expired or
// gone, by the local deadline passing while renewals fail, or by Held. Call Hold
// once.
func (l *Lock) Hold(ctx context.Context) (held context.Context, stop func()) {
	held, cancel := context.WithCancelCause(ctx)
	l.mu.Lock()
	l.cancel = cancel
	if l.lost != nil {
		cancel(l.lost)
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.renew(held)
	}()
	return held, func() {
		cancel(nil)
		<-done
	}
}

func (l *Lock) renew(ctx context.Context) {
	wait := renewEvery(l.lease)
	for {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if l.Held() != nil {
			return
		}
		// A renewal that hangs is given up in time for the next attempt.
		rctx, cancel := context.WithTimeout(ctx, retryEvery(l.lease))
		err := l.Renew(rctx)
		cancel()
		switch {
		case err == nil:
			wait = renewEvery(l.lease)
		case errors.Is(err, ErrLost), ctx.Err() != nil:
			return
		default:
			l.mu.Lock()
			l.renewErr = err
			l.mu.Unlock()
			wait = retryEvery(l.lease)
		}
		if l.Held() != nil {
			return
		}
	}
}

// Fence is an AWS SDK API option for the clients a rebuild writes through (the
// projection's, the sweep's schedule or rule): once l is lost, it refuses every call
// of theirs with the *LostError, checking Held before each attempt is sent.
func (l *Lock) Fence(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("RebuildLockFence",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if err := l.Held(); err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// Fenced returns a copy of cfg whose clients l fences (see Fence).
func (l *Lock) Fenced(cfg aws.Config) aws.Config {
	c := cfg.Copy()
	c.APIOptions = append(slices.Clone(c.APIOptions), l.Fence)
	return c
}

// PauseSweep pauses the sweep for the rebuild that holds l. A sweep already disabled
// when a fresh lock was taken is left alone (whoever disabled it decides when it runs
// again); otherwise the lock records the pause first and the sweep is disabled after,
// so that a holder that loses the lock at any point leaves its pause to the next
// holder, who resumes it. A lock inherited with the pause recorded disables the
// sweep again, in case it was enabled meanwhile. Once PauseSweep has been called,
// call ResumeSweep whatever it returned; a lost lock is a *LostError and pauses
// nothing.
func (l *Lock) PauseSweep(ctx context.Context, sweep Switch) error {
	if err := l.Held(); err != nil {
		return err
	}
	l.mu.Lock()
	paused := l.paused
	l.mu.Unlock()
	if !paused {
		disabled, err := sweep.Disabled(ctx)
		if err != nil || disabled {
			return err
		}
		if err := l.Paused(ctx, true); err != nil {
			return err
		}
	}
	if err := l.Held(); err != nil {
		return err
	}
	return sweep.Disable(ctx)
}

// ResumeSweep enables the sweep again if l paused it or inherited its pause, and only
// while l holds the lock: it first renews the lock, a write conditional on l owning
// it unexpired, then enables the sweep, then clears the pause from the lock. A lock
// lost (or found lost by that renewal) is a *LostError and leaves the sweep as it is,
// for the current holder to resume; so does a renewal that fails otherwise, the lock
// then left to expire with its pause recorded. ResumeSweep is safe to call more than
// once, and needs a context still live after the work it guards was cancelled.
func (l *Lock) ResumeSweep(ctx context.Context, sweep Switch) error {
	l.mu.Lock()
	paused := l.paused
	l.mu.Unlock()
	if !paused {
		return nil
	}
	if err := l.Renew(ctx); err != nil {
		return fmt.Errorf("rebuild: confirm the lock before resuming the sweep: %w", err)
	}
	if err := l.Held(); err != nil {
		return err
	}
	if err := sweep.Enable(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	l.paused = false // the sweep runs: the lock may go, whether or not it says so
	l.mu.Unlock()
	return l.Paused(ctx, false)
}
