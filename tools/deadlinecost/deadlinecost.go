// Package deadlinecost measures what each way of keeping the to-do list would write
// and read for one rental, on the local AWS emulator through the real AWS SDK, with
// the deadlines module's counter (deadlines/dynamo/capacity): the Deadlines table as
// it is (deadlines/dynamo), and the alternatives of
// docs/decisions/0029-what-a-deadline-costs-to-keep.md (settlement by delete, expiry
// by TTL, one row per rental, the table's own key as the index), for every rental
// path, with every deadline a rental has (payment due, process stuck, return due).
// Each design is driven by the records the service appends, in their order, and
// read back the way the sweep and the listings read it.
package deadlinecost

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

// Env is what a design writes and reads through: every call of Client and of Events
// is counted.
type Env struct {
	Client *dynamodb.Client
	// Events is the event store, on Client: the reads a design makes instead of
	// writes are counted with its own.
	Events eventstore.Store
	// Table is the design's to-do table, Shards its write shards.
	Table  string
	Shards int
	Kinds  deadlines.Kinds
	// Between, when set, is called by a design that guards an opening with a read
	// in the gap between that read and the write it guards: where a settlement
	// projected at the same time falls (the tests' way of playing that race).
	Between func(ctx context.Context)
}

// changes returns what record r means for each kind, as the projector reads it.
func (e *Env) changes(r eventstore.Record) ([]deadlines.KindChange, error) {
	return e.Kinds.Changes(dynamo.RecordOf(r))
}

// partitionOf returns the index partition of kind k's row about subject.
func (e *Env) partitionOf(k deadlines.Kind, subject string) string {
	return partition(k.Name, e.shardOf(subject))
}

// between calls Between if it is set.
func (e *Env) between(ctx context.Context) {
	if e.Between != nil {
		e.Between(ctx)
	}
}

// Design is one way of keeping the to-do list.
type Design interface {
	// Name is the design's name in the report; Short its tables' suffix.
	Name() string
	Short() string
	// Define returns the definition of the design's table named name.
	Define(name string) *dynamodb.CreateTableInput
	// Project applies one record of the Events table, as the projector would.
	Project(ctx context.Context, e *Env, r eventstore.Record) error
	// Outstanding returns the kinds of subject's rows that the sweep reads: every
	// shard of every swept kind, with no cutoff.
	Outstanding(ctx context.Context, e *Env, subject string) ([]string, error)
}

// Designs returns the designs measured, today's first.
func Designs() []Design {
	return []Design{Today{}, Deleted{}, Expired{}, OneRow{}, OwnKey{}, OwnKey{Markers: true}}
}

// Function is the label of the counted calls: the projector's, the one writer.
const Function = rentalcost.FunctionProjector

// Bench measures designs on one emulator: an Events table and a to-do table per
// design.
type Bench struct {
	counted        *dynamodb.Client
	counter        *capacity.Counter
	store          *dynamo.Store // uncounted: appends the rentals' events
	events, prefix string
	kinds          deadlines.Kinds
	rentals        int
}

// Start creates the Events table and one to-do table per design, named from prefix.
func Start(ctx context.Context, cfg aws.Config, prefix string, designs []Design) (*Bench, error) {
	plain := dynamodb.NewFromConfig(cfg)
	counter := capacity.NewCounter(plain)
	counted := cfg.Copy()
	counted.APIOptions = append(counted.APIOptions, counter.Middleware(Function))
	b := &Bench{
		counted: dynamodb.NewFromConfig(counted), counter: counter,
		events: prefix + "-events", prefix: prefix,
		kinds: deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{}),
	}
	b.store = dynamo.New(plain, b.events)
	if err := schema.Create(ctx, plain, schema.Events(b.events)); err != nil {
		return nil, err
	}
	for _, d := range designs {
		if err := schema.Create(ctx, plain, d.Define(b.table(d))); err != nil {
			return nil, fmt.Errorf("deadlinecost: %s: %w", d.Name(), err)
		}
	}
	return b, nil
}

func (b *Bench) table(d Design) string { return b.prefix + "-" + d.Short() }

// Env returns the environment design d runs in, counted.
func (b *Bench) Env(d Design) *Env {
	return &Env{Client: b.counted, Events: dynamo.New(b.counted, b.events), Table: b.table(d),
		Shards: deadlinetable.DefaultShards, Kinds: b.kinds}
}

// Rental is one rental a run appended and projected.
type Rental struct {
	ID      string
	Records []eventstore.Record
}

// NewRental returns a rental id on a bike of its own, never used before on this bench.
func (b *Bench) NewRental() string {
	b.rentals++
	return rental.NewRentalID(fmt.Sprintf("dc%d", b.rentals), "AAAAAAAAAAAAAAAAAAAAAA")
}

// Measurement is what one design did for one rental of one path.
type Measurement struct {
	Design string
	Path   rentalcost.Path
	// Deadlines is the to-do table's part (writes, index writes included, and
	// reads), Events the event store's reads the design makes instead of writes.
	Deadlines, Events capacity.Totals
	// EventsTable names the event store's table.
	EventsTable string
	// Calls are the counted calls, in order; Steps the same calls by the record
	// whose projection made them.
	Calls []capacity.Call
	Steps []Step
}

// Step is what the projection of one record did.
type Step struct {
	Record string // its event type
	// What says what the record does to which rows ("opens the payment due").
	What  string
	Calls []capacity.Call
}

// Measure plays path for a new rental through d and counts what d wrote and read.
func (b *Bench) Measure(ctx context.Context, d Design, path rentalcost.Path) (Measurement, Rental, error) {
	e := b.Env(d)
	id := b.NewRental()
	bike, _ := rental.BikeIDOf(id)
	// Each record is projected once appended, before the next is: the order the
	// projector sees them in when it keeps up. (Other orders, and replays, are the
	// tests' cases.)
	b.counter.Reset()
	var steps []Step
	recs, err := newAppender(b.store).add(ctx, eventsOf(path, bike, id), func(r eventstore.Record) error {
		before := len(b.counter.Calls())
		if err := d.Project(ctx, e, r); err != nil {
			return fmt.Errorf("deadlinecost: %s, %s: project %s: %w", d.Name(), path, r.Type, err)
		}
		if calls := b.counter.Calls()[before:]; len(calls) > 0 {
			steps = append(steps, Step{Record: r.Type, What: whatOf(e, r), Calls: calls})
		}
		return nil
	})
	if err != nil {
		return Measurement{}, Rental{}, err
	}
	calls := b.counter.Calls()
	by := capacity.GroupBy(calls, func(_ capacity.Call, u capacity.Usage) string { return u.Table })
	m := Measurement{Design: d.Name(), Path: path, Deadlines: by[e.Table], Events: by[b.events], Calls: calls, Steps: steps, EventsTable: b.events}
	return m, Rental{ID: id, Records: recs}, nil
}

// whatOf says what record r does to the to-do list's rows, from the kinds'
// declaration.
func whatOf(e *Env, r eventstore.Record) string {
	changes, err := e.changes(r)
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, c := range changes {
		switch {
		case c.Settled:
			parts = append(parts, "settles the "+rowName(c.Kind.Name))
		case c.Kind.Takes != "":
			parts = append(parts, "opens the "+rowName(c.Kind.Name)+", taking the "+rowName(c.Kind.Takes)+" over")
		default:
			parts = append(parts, "opens the "+rowName(c.Kind.Name))
		}
	}
	return strings.Join(parts, "; ")
}

// rowName is how the report names a kind's row.
func rowName(kind string) string {
	switch kind {
	case deadlinekinds.Payment:
		return "payment due"
	case deadlinekinds.Stuck:
		return "process stuck"
	case deadlinekinds.Return:
		return "return due"
	case deadlinekinds.Overdue:
		return "overdue return"
	}
	return kind
}
