// Package schedules gives precise deadlines to the kinds that ask for them: an
// EventBridge Scheduler one-time schedule per outstanding row, at its due time,
// whose input is the one-row trigger of the sweep function (deadlines.Trigger
// {"kind", "key"}), so that the row's command is sent on time rather than at the
// next periodic sweep, which stays on as the safety net. Projection keeps the
// schedules from the same records as the rows: it is its own package so that
// only the projector links the Scheduler client.
package schedules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/deadlines"
)

// API is the part of the EventBridge Scheduler client a Projection uses;
// *scheduler.Client is one.
type API interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

var _ API = (*scheduler.Client)(nil)

// Retry policy of a row's one-time schedule: Scheduler retries a failed or
// throttled invocation of the sweep RetryAttempts times within MaxEventAge, then
// gives the event to the dead-letter queue, if there is one. The periodic sweep
// finds the row in any case.
const (
	RetryAttempts = 10
	MaxEventAge   = time.Hour
)

// Config configures a Projection.
type Config struct {
	// Client is the Scheduler client.
	Client API
	// Group is the schedule group the schedules are made in.
	Group string
	// TargetARN is the sweep function's; RoleARN the role Scheduler takes to
	// invoke it.
	TargetARN, RoleARN string
	// DeadLetterARN, when set, is the SQS queue of the invocations Scheduler gave
	// up on.
	DeadLetterARN string
	// Kinds are the kinds the projection projects, all of them: those of a key
	// prefix that a precise kind shares take its rows over.
	Kinds deadlines.Kinds
	// Precise names the kinds whose rows get a schedule: swept kinds (the
	// projector's declaration of them need not carry their commands, which the
	// sweep sends).
	Precise []string
	// Now is the clock; nil: time.Now. A row due by the time its schedule would be
	// made gets none: the next sweep finds it.
	Now func() time.Time
	// Logger receives a line for each record whose schedules could not be kept;
	// nil: slog.Default().
	Logger *slog.Logger
}

// Projection is a deadlines.Projection that keeps a one-time schedule for every
// outstanding row of the precise kinds: after the projection applies a record,
// each row of a precise kind that the record opens or settles is read back
// (Index.Row), and its schedule is made (or moved) to the row's due time if the
// projection holds it outstanding, or deleted if it does not. The schedule is
// named after the row's key (Name): making it again, moving it to the same time,
// or deleting it again (a replayed record) changes nothing. Safe for concurrent
// use.
type Projection struct {
	deadlines.Projection
	cfg     Config
	precise []deadlines.Kind
}

// New returns p with schedules kept as cfg says, or what is wrong with cfg.
func New(p deadlines.Projection, cfg Config) (*Projection, error) {
	var errs []error
	if p == nil || cfg.Client == nil {
		errs = append(errs, errors.New("schedules: want a projection and a Scheduler client"))
	}
	if !groupName(cfg.Group) {
		errs = append(errs, fmt.Errorf("schedules: group %q: want 1 to 64 of A-Z, a-z, 0-9, '-', '_' and '.'", cfg.Group))
	}
	if cfg.TargetARN == "" || cfg.RoleARN == "" {
		errs = append(errs, errors.New("schedules: want the target's ARN and the role's"))
	}
	if len(cfg.Precise) == 0 {
		errs = append(errs, errors.New("schedules: no Precise kinds"))
	}
	var precise []deadlines.Kind
	for i, name := range cfg.Precise {
		k, ok := cfg.Kinds.ByName(name)
		if !ok || !k.Swept() || slices.Contains(cfg.Precise[:i], name) {
			errs = append(errs, fmt.Errorf("schedules: precise kind %q: want a swept kind of Kinds, named once", name))
		}
		precise = append(precise, k)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Projection{Projection: p, cfg: cfg, precise: precise}, nil
}

// groupName reports whether s is a schedule group's name Scheduler takes.
func groupName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !plainByte(c) && c != '.' {
			return false
		}
	}
	return true
}

// Apply projects r, then keeps the schedules of the rows it touches (Schedule).
// The projection's error is Apply's. The schedules' is logged, not returned: a
// schedule is an optimisation the periodic sweep backs up, so a Scheduler that
// still refuses after the SDK's retries does not hold the projection back.
func (p *Projection) Apply(ctx context.Context, r deadlines.Record) error {
	if err := p.Projection.Apply(ctx, r); err != nil {
		return err
	}
	if err := p.Schedule(ctx, r); err != nil {
		p.cfg.Logger.LogAttrs(ctx, slog.LevelError, "precise deadline not kept; the sweep will find the row",
			slog.String("stream", r.Stream), slog.Int64("position", r.Position), slog.String("type", r.Type),
			slog.String("error", err.Error()))
	}
	return nil
}

// Schedule keeps the schedules of the precise kinds' rows that r opens or
// settles, as the projection holds them now: r must have been applied. A row of a
// precise kind (or of a kind of the same key prefix, which may have taken it over)
// that r touches is read back: outstanding, its schedule is made at its due time,
// or moved there; not outstanding, its schedule is deleted. It returns the first
// error of a read or of Scheduler.
func (p *Projection) Schedule(ctx context.Context, r deadlines.Record) error {
	changes, err := p.cfg.Kinds.Changes(r)
	if err != nil {
		return err
	}
	var done []string // keys kept already: kinds of one prefix share their rows' keys
	for _, c := range changes {
		key := c.Kind.Key(c.Subject)
		if slices.Contains(done, key) {
			continue
		}
		done = append(done, key)
		if err := p.keep(ctx, c.Kind.KeyPrefix(), c.Subject); err != nil {
			return err
		}
	}
	return nil
}

// keep makes, moves or deletes the schedule of the row at the key of prefix and
// subject, as the projection holds the row.
func (p *Projection) keep(ctx context.Context, prefix, subject string) error {
	mine := false
	for _, k := range p.precise {
		if k.KeyPrefix() != prefix {
			continue
		}
		mine = true
		row, ok, err := p.Row(ctx, k, subject)
		if err != nil {
			return fmt.Errorf("schedules: reading %s %s: %w", k.Name, subject, err)
		}
		if ok {
			return p.arm(ctx, k, row)
		}
	}
	if !mine {
		return nil
	}
	return p.disarm(ctx, prefix+subject)
}
