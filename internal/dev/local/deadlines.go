package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines/schedules"
	"github.com/bikerental/bikerental/internal/wiring"
)

// DeadlineGroup is the schedule group of the payments' one-time schedules on the
// local stack (precise deadlines).
const DeadlineGroup = "bikerental-local-deadlines"

// deadlineDefaults are the settings of precise deadlines on the local stack, where
// the ARNs only need the right shape: the emulator stores schedules but never invokes
// their targets, and FireDeadlines plays Scheduler instead.
var deadlineDefaults = map[string]string{
	wiring.EnvDeadlineGroup:  DeadlineGroup,
	wiring.EnvDeadlineTarget: "arn:aws:lambda:us-east-1:000000000000:function:bikerental-local-sweep",
	wiring.EnvDeadlineRole:   "arn:aws:iam::000000000000:role/bikerental-local-sweep-scheduler",
	wiring.EnvDeadlineDLQ:    "arn:aws:sqs:us-east-1:000000000000:bikerental-local-deadline-dlq",
}

// withDeadlineDefaults fills in the local settings of precise deadlines that getenv
// leaves empty.
func withDeadlineDefaults(getenv wiring.Getenv) wiring.Getenv {
	return func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return deadlineDefaults[name]
	}
}

// CreateDeadlineGroup creates the schedule group of the payments' one-time schedules;
// an existing one is fine.
func CreateDeadlineGroup(ctx context.Context, client *scheduler.Client, group string) error {
	_, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)})
	var conflict *types.ConflictException
	if err != nil && !errors.As(err, &conflict) {
		return fmt.Errorf("local: create schedule group %s: %w", group, err)
	}
	return nil
}

// DeadlineFirer plays EventBridge Scheduler for the payments' one-time schedules,
// which the emulator stores but never fires: every Poll it lists the group's
// schedules through the Scheduler API, and invokes the target of each one whose at()
// time has come with the schedule's input, several at once as Scheduler does. A
// schedule that ran is deleted (ActionAfterCompletion DELETE); a failed invocation is
// retried on later polls within the schedule's retry policy, then handed to
// OnDeadLetter and deleted.
type DeadlineFirer struct {
	Client *scheduler.Client
	Group  string
	// Poll is how often the schedules are read (DefaultDeadlinePoll if zero).
	Poll time.Duration
	// Invoke runs the target with the schedule's input.
	Invoke func(ctx context.Context, input string) error
	// OnDeadLetter receives a schedule whose invocation Scheduler gave up on.
	OnDeadLetter func(name, input string, err error)
	Logger       *slog.Logger
	// MaxInFlight bounds concurrent invocations (16 if zero).
	MaxInFlight int
}

// DefaultDeadlinePoll is how often the local stack looks for due one-time schedules.
const DefaultDeadlinePoll = 500 * time.Millisecond

type oneTime struct {
	at       time.Time
	input    string
	attempts int
	maxTries int
	maxAge   time.Duration
	busy     bool
}

// Run fires due schedules until ctx ends.
func (f *DeadlineFirer) Run(ctx context.Context) error {
	poll := f.Poll
	if poll <= 0 {
		poll = DefaultDeadlinePoll
	}
	inFlight := f.MaxInFlight
	if inFlight <= 0 {
		inFlight = 16
	}
	var mu sync.Mutex
	known := map[string]*oneTime{}
	slots := make(chan struct{}, inFlight)
	var running sync.WaitGroup
	defer running.Wait()
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		listed, err := f.list(ctx)
		if err != nil {
			if ctx.Err() == nil {
				f.Logger.LogAttrs(ctx, slog.LevelError, "local scheduler: list one-time schedules", slog.String("error", err.Error()))
			}
			continue
		}
		mu.Lock()
		for name := range known {
			if !listed[name] && !known[name].busy {
				delete(known, name) // deleted on settlement
			}
		}
		var fresh []string
		for name := range listed {
			if known[name] == nil {
				fresh = append(fresh, name)
			}
		}
		mu.Unlock()
		for _, name := range fresh {
			s, err := f.get(ctx, name)
			if err != nil {
				continue // deleted meanwhile, or read next time
			}
			mu.Lock()
			known[name] = s
			mu.Unlock()
		}
		now := time.Now()
		mu.Lock()
		for name, s := range known {
			if s.busy || now.Before(s.at) {
				continue
			}
			select {
			case slots <- struct{}{}:
			default:
				continue // as many in flight as allowed: next poll
			}
			s.busy = true
			s.attempts++
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-slots }()
				err := f.Invoke(ctx, s.input)
				if f.settle(ctx, &mu, known, name, s, err) {
					f.delete(ctx, name)
				}
			}()
		}
		mu.Unlock()
	}
}

// settle records the outcome of one invocation of schedule name, and reports
// whether the schedule is done with (ran, or given up on) and should be deleted.
func (f *DeadlineFirer) settle(ctx context.Context, mu *sync.Mutex, known map[string]*oneTime, name string, s *oneTime, err error) bool {
	mu.Lock()
	defer mu.Unlock()
	s.busy = false
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return false
	case s.attempts > s.maxTries || time.Since(s.at) > s.maxAge:
		f.Logger.LogAttrs(ctx, slog.LevelError, "local scheduler: giving up on a one-time schedule",
			slog.String("schedule", name), slog.Int("attempts", s.attempts), slog.String("error", err.Error()))
		if f.OnDeadLetter != nil {
			f.OnDeadLetter(name, s.input, err)
		}
	default:
		f.Logger.LogAttrs(ctx, slog.LevelWarn, "local scheduler: a one-time schedule's invocation failed; retrying",
			slog.String("schedule", name), slog.Int("attempts", s.attempts), slog.String("error", err.Error()))
		return false
	}
	delete(known, name)
	return true
}

func (f *DeadlineFirer) list(ctx context.Context) (map[string]bool, error) {
	names := map[string]bool{}
	pages := scheduler.NewListSchedulesPaginator(f.Client, &scheduler.ListSchedulesInput{GroupName: aws.String(f.Group)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range page.Schedules {
			names[aws.ToString(s.Name)] = true
		}
	}
	return names, nil
}

func (f *DeadlineFirer) get(ctx context.Context, name string) (*oneTime, error) {
	out, err := f.Client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String(f.Group)})
	if err != nil {
		return nil, err
	}
	at, err := schedules.ParseAtExpression(aws.ToString(out.ScheduleExpression))
	if err != nil || out.Target == nil {
		return nil, fmt.Errorf("local scheduler: schedule %s is not one-time: %v", name, err)
	}
	s := &oneTime{at: at, input: aws.ToString(out.Target.Input), maxTries: 185, maxAge: 24 * time.Hour}
	if p := out.Target.RetryPolicy; p != nil {
		s.maxTries = int(aws.ToInt32(p.MaximumRetryAttempts))
		s.maxAge = time.Duration(aws.ToInt32(p.MaximumEventAgeInSeconds)) * time.Second
	}
	return s, nil
}

func (f *DeadlineFirer) delete(ctx context.Context, name string) {
	_, err := f.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(name), GroupName: aws.String(f.Group)})
	var gone *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &gone) && ctx.Err() == nil {
		f.Logger.LogAttrs(ctx, slog.LevelError, "local scheduler: delete a one-time schedule that ran",
			slog.String("schedule", name), slog.String("error", err.Error()))
	}
}
