package rebuild_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamotypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
)

// fakeClock is a holder's clock that a test moves.
type fakeClock struct{ at atomic.Int64 }

func newClock(at time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(at)
	return c
}

func (c *fakeClock) now() time.Time   { return time.Unix(0, c.at.Load()) }
func (c *fakeClock) set(at time.Time) { c.at.Store(at.UnixNano()) }

// lockItem reads the lock's owner and recorded pause, "" when there is no lock.
func lockItem(t *testing.T, db *dynamodb.Client, table string) (owner string, paused bool) {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]dynamotypes.AttributeValue{keyAttr: &dynamotypes.AttributeValueMemberS{Value: rebuild.LockKey}}})
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := out.Item["owner"].(*dynamotypes.AttributeValueMemberS); ok {
		owner = o.Value
	}
	if p, ok := out.Item["pausedSweep"].(*dynamotypes.AttributeValueMemberBOOL); ok {
		paused = p.Value
	}
	return owner, paused
}

// interrupting lists first, waits until all of them were replayed, calls pause, and
// then lists rest: a rebuild paused between two streams for as long as pause says.
type interrupting struct {
	rebuild.Source
	first, rest []string
	replayed    chan struct{} // closed when first are replayed
	pause       func()
}

func (s *interrupting) StreamIDs(ctx context.Context, prefix string, segments int, fn func(string) error) error {
	for _, id := range s.first {
		if err := fn(id); err != nil {
			return err
		}
	}
	select {
	case <-s.replayed:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return errors.New("the first streams were never replayed")
	}
	s.pause()
	for _, id := range s.rest {
		if err := fn(id); err != nil {
			return err
		}
	}
	return nil
}

// TestARebuildThatLostItsLockStops pauses rebuild A, after it paused the sweep and
// replayed the streams of three rentals, for longer than its lease (its clock jumps
// past it); rebuild B takes the lock over meanwhile. When A carries on, it writes
// nothing more: the rentals it had not replayed have no rows, and its rebuild fails
// saying it lost the lock. A then cannot resume the sweep nor release the lock; B,
// which inherited the pause, resumes it.
func TestARebuildThatLostItsLockStops(t *testing.T) {
	w := rebuildtest.NewWorld(t)
	var early, late []string
	for i := range 3 {
		early = append(early, w.Rent(fmt.Sprintf("early%d", i), rebuildtest.Outstanding))
		late = append(late, w.Rent(fmt.Sprintf("late%d", i), rebuildtest.Outstanding))
	}
	slices.Sort(early)
	src := &interrupting{Source: w.Store, replayed: make(chan struct{})}
	if err := w.Store.StreamIDs(ctx, "", 1, func(id string) error {
		if !rebuild.Projected(id) {
			return nil
		}
		if strings.Contains(id, "early") {
			src.first = append(src.first, id)
		} else if strings.Contains(id, "late") {
			src.rest = append(src.rest, id)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cfg := emulatortest.Config(t)
	sched := scheduler.NewFromConfig(cfg)
	name := createSchedule(t, sched, "", types.ScheduleStateEnabled)

	// Given rebuild A holding the lock, with the sweep paused, its projection and
	// its schedule client fenced by the lock,
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clockA := newClock(start)
	a, err := rebuild.Acquire(ctx, w.Client, w.DeadlinesTable, "rebuild-a", time.Minute, clockA.now)
	if err != nil {
		t.Fatal(err)
	}
	held, stop := a.Hold(ctx)
	defer stop()
	fenced := a.Fenced(cfg)
	projection, err := deadlinetable.New(dynamodb.NewFromConfig(fenced), w.DeadlinesTable, w.Kinds, deadlinetable.WithShards(2))
	if err != nil {
		t.Fatal(err)
	}
	sweepA := rebuild.Schedule(scheduler.NewFromConfig(fenced), "", name)
	if err := a.PauseSweep(held, sweepA); err != nil {
		t.Fatal(err)
	}
	if s := getSchedule(t, sched, "", name).State; s != types.ScheduleStateDisabled {
		t.Fatalf("schedule %s after the pause, want DISABLED", s)
	}

	// when A stops for two minutes after replaying the early rentals, and B takes
	// the lock over,
	var b *rebuild.Lock
	src.pause = func() {
		clockA.set(start.Add(2 * time.Minute))
		var err error
		if b, err = rebuild.Acquire(ctx, w.Client, w.DeadlinesTable, "rebuild-b", time.Minute, func() time.Time { return start.Add(2 * time.Minute) }); err != nil {
			t.Errorf("B could not take over A's expired lock: %v", err)
		}
	}
	var once sync.Once
	res, err := rebuild.Deadlines(held, src, projection, func(done int) {
		if done == len(src.first) {
			once.Do(func() { close(src.replayed) })
		}
	})

	// then A's rebuild fails, saying it lost the lock, and its context is cancelled,
	if !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("A's rebuild: %+v, %v; want the lock lost", res, err)
	}
	if cause := context.Cause(held); !errors.Is(cause, rebuild.ErrLost) {
		t.Errorf("A's context: %v, want cancelled by the loss", cause)
	}
	// (a stream of the late ones may still end, if nothing in it is written)
	if res.Streams < len(src.first) || res.Streams >= len(src.first)+len(src.rest) {
		t.Errorf("A replayed %d streams, want the %d before its pause and not all of the %d after", res.Streams, len(src.first), len(src.rest))
	}
	// it wrote nothing after the pause: only the early rentals have rows,
	reader := w.Projection(2)
	if got := w.Pending(reader); !slices.Equal(got, early) {
		t.Errorf("pending %q, want only the early rentals %q: A wrote after it lost the lock", got, early)
	}
	if backlog, _, err := (deadlinekinds.Listing{Index: reader, Kinds: w.Kinds}).Backlog(ctx, time.Now()); err != nil || len(backlog.Open) != len(early) {
		t.Errorf("open processes %+v (%v), want the %d early rentals'", backlog.Open, err, len(early))
	}
	if err := projection.Apply(ctx, dynamo.RecordOf(w.PaymentOf(late[0])[0])); !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("a write through A's projection after the loss: %v, want ErrLost", err)
	}
	// it neither resumes the sweep nor releases the lock,
	if err := a.ResumeSweep(ctx, sweepA); !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("A's resume: %v, want ErrLost", err)
	}
	if err := a.Release(ctx); !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("A's release: %v, want ErrLost", err)
	}
	if s := getSchedule(t, sched, "", name).State; s != types.ScheduleStateDisabled {
		t.Errorf("schedule %s after A's resume, want DISABLED: B is still rebuilding", s)
	}
	if owner, paused := lockItem(t, w.Client, w.DeadlinesTable); owner != "rebuild-b" || !paused {
		t.Errorf("lock owned by %q, paused %v; want B's with the pause", owner, paused)
	}
	if b == nil {
		t.FailNow()
	}

	// and B, which inherited the pause, resumes the sweep and releases the lock.
	sweepB := rebuild.Schedule(sched, "", name)
	if !b.Inherited {
		t.Error("B did not inherit A's pause")
	}
	if err := b.PauseSweep(ctx, sweepB); err != nil {
		t.Fatal(err)
	}
	if err := b.ResumeSweep(ctx, sweepB); err != nil {
		t.Fatal(err)
	}
	if s := getSchedule(t, sched, "", name).State; s != types.ScheduleStateEnabled {
		t.Errorf("schedule %s after B's resume, want ENABLED", s)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if owner, _ := lockItem(t, w.Client, w.DeadlinesTable); owner != "" {
		t.Errorf("lock owned by %q after B released it", owner)
	}
}

var errThrottled = errors.New("throttled")

// flakyLock fails the renewals it is told to fail, and counts them.
type flakyLock struct {
	rebuild.LockAPI
	failFirst atomic.Int64 // how many of the next renewals fail
	failAll   atomic.Bool
	failed    atomic.Int64
	renewed   atomic.Int64
}

func (f *flakyLock) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.failAll.Load() || f.failFirst.Add(-1) >= 0 {
		f.failed.Add(1)
		return nil, errThrottled
	}
	out, err := f.LockAPI.UpdateItem(ctx, in, o...)
	if err == nil {
		f.renewed.Add(1)
	}
	return out, err
}

// waitFor waits until cond holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// blocked lists one stream and blocks reading it until the rebuild is cancelled: a
// rebuild that would run for as long as it keeps its lock.
type blocked struct{ reads atomic.Int64 }

func (*blocked) StreamIDs(ctx context.Context, prefix string, segments int, fn func(string) error) error {
	return fn("payment-rp_blocked")
}

func (b *blocked) Read(ctx context.Context, streamID string, from int64) ([]eventstore.Record, error) {
	b.reads.Add(1)
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-time.After(time.Minute):
		return nil, errors.New("the rebuild was not stopped")
	}
}

// TestRenewalsThatKeepFailingLoseTheLock holds a lock of a four-second lease through
// renewals that fail for a reason other than the lock being taken: two failures
// are retried and the lock is kept past the first lease; when every renewal fails,
// the lock is lost at the holder's deadline and the rebuild stops with an error that
// says so and what the renewals met.
func TestRenewalsThatKeepFailingLoseTheLock(t *testing.T) {
	db := emulatortest.DynamoDB(t)
	table := newTable(t, db)
	flaky := &flakyLock{LockAPI: db}
	const lease = 4 * time.Second
	acquired := time.Now()
	l, err := rebuild.Acquire(ctx, flaky, table, "rebuild-a", lease, nil)
	if err != nil {
		t.Fatal(err)
	}
	flaky.failFirst.Store(2)
	held, stop := l.Hold(ctx)
	defer stop()

	// Two failed renewals, retried: the lock outlives its first lease.
	waitFor(t, "renewals after two failures, past the first lease", func() bool {
		return flaky.failed.Load() == 2 && flaky.renewed.Load() >= 2 && time.Since(acquired) > lease
	})
	if err := l.Held(); err != nil || held.Err() != nil {
		t.Fatalf("lost after failures it retried: %v, %v", err, context.Cause(held))
	}

	// Every renewal failing: the rebuild stops.
	flaky.failAll.Store(true)
	src := &blocked{}
	_, err = rebuild.Deadlines(held, src, &projector{}, nil)
	if !errors.Is(err, rebuild.ErrLost) || !errors.Is(err, errThrottled) || src.reads.Load() != 1 {
		t.Fatalf("rebuild = %v after %d reads; want it stopped by the lost lock, naming the renewals' failure", err, src.reads.Load())
	}
	if err := l.Held(); !errors.Is(err, rebuild.ErrLost) || !strings.Contains(err.Error(), "lease ran out") {
		t.Errorf("Held = %v, want the lease run out", err)
	}
	if n := flaky.failed.Load(); n < 4 {
		t.Errorf("%d failed renewals in all, want the last ones retried", n)
	}
	// A lost lock writes nothing more to its item, not even to release it.
	before := flaky.failed.Load() + flaky.renewed.Load()
	if err := l.Renew(ctx); !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("Renew after the loss: %v", err)
	}
	if err := l.Release(ctx); !errors.Is(err, rebuild.ErrLost) {
		t.Errorf("Release after the loss: %v", err)
	}
	if after := flaky.failed.Load() + flaky.renewed.Load(); after != before {
		t.Errorf("%d writes to the lock after its loss", after-before)
	}
}

// TestOnlyTheHolderResumesTheSweep lets rebuild A pause the sweep and B take its
// lock over while A's own clock still says it holds it (B's clock runs ahead, or
// an operator forced it): A's resume is refused by the lock, and the sweep stays
// disabled for B, which resumes it.
func TestOnlyTheHolderResumesTheSweep(t *testing.T) {
	cfg := emulatortest.Config(t)
	sched := scheduler.NewFromConfig(cfg)
	rules := eventbridge.NewFromConfig(cfg)
	cases := []struct {
		name  string
		sweep func(t *testing.T) (rebuild.Switch, func() bool)
	}{
		{"schedule", func(t *testing.T) (rebuild.Switch, func() bool) {
			name := createSchedule(t, sched, "", types.ScheduleStateEnabled)
			return rebuild.Schedule(sched, "", name), func() bool {
				return getSchedule(t, sched, "", name).State == types.ScheduleStateDisabled
			}
		}},
		{"rule", func(t *testing.T) (rebuild.Switch, func() bool) {
			name := emulatortest.TableName(t, "sweep-rule")
			if _, err := rules.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), ScheduleExpression: aws.String("rate(1 minute)")}); err != nil {
				t.Fatal(err)
			}
			return rebuild.Rule(rules, name), func() bool {
				out, err := rules.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(name)})
				if err != nil {
					t.Fatal(err)
				}
				return out.State == ebtypes.RuleStateDisabled
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := emulatortest.DynamoDB(t)
			table := newTable(t, db)
			sweep, disabled := c.sweep(t)
			start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			a, err := rebuild.Acquire(ctx, db, table, "rebuild-a", time.Minute, func() time.Time { return start })
			if err != nil {
				t.Fatal(err)
			}
			if err := a.PauseSweep(ctx, sweep); err != nil || !disabled() {
				t.Fatalf("pause: %v, disabled %v", err, disabled())
			}
			b, err := rebuild.Acquire(ctx, db, table, "rebuild-b", time.Minute, func() time.Time { return start.Add(2 * time.Minute) })
			if err != nil || !b.Inherited {
				t.Fatalf("B's acquire: %+v, %v", b, err)
			}
			if err := a.Held(); err != nil {
				t.Fatalf("A's clock says its lease ran out: %v", err)
			}
			err = a.ResumeSweep(ctx, sweep)
			var locked *rebuild.LockedError
			if !errors.Is(err, rebuild.ErrLost) || !errors.As(err, &locked) || locked.Owner != "rebuild-b" {
				t.Errorf("A's resume: %v, want refused: B holds the lock", err)
			}
			if !disabled() {
				t.Error("A resumed the sweep while B holds the lock")
			}
			if err := a.Release(ctx); !errors.Is(err, rebuild.ErrLost) {
				t.Errorf("A's release: %v", err)
			}
			if owner, paused := lockItem(t, db, table); owner != "rebuild-b" || !paused {
				t.Errorf("lock owned by %q, paused %v; want B's with the pause", owner, paused)
			}
			if err := b.PauseSweep(ctx, sweep); err != nil {
				t.Fatal(err)
			}
			if err := b.Release(ctx); !errors.Is(err, rebuild.ErrStillPaused) {
				t.Errorf("B released the lock with the sweep paused: %v", err)
			}
			if err := b.ResumeSweep(ctx, sweep); err != nil || disabled() {
				t.Errorf("B's resume: %v, disabled %v", err, disabled())
			}
			if err := b.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}
