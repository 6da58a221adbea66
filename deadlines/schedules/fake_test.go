package schedules_test

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/schedules"
)

// fakeScheduler keeps schedules as Scheduler does, by group and name, answering a
// second creation with a ConflictException and an update or deletion of none with
// a ResourceNotFoundException; it keeps every call made, and fails them all with
// fail when it is set.
type fakeScheduler struct {
	mu        sync.Mutex
	schedules map[string]*scheduler.CreateScheduleInput
	calls     []string
	fail      error
}

var _ schedules.API = (*fakeScheduler)(nil)

func newFakeScheduler() *fakeScheduler {
	return &fakeScheduler{schedules: map[string]*scheduler.CreateScheduleInput{}}
}

func (f *fakeScheduler) call(op string, group, name *string) (string, error) {
	f.calls = append(f.calls, op+" "+aws.ToString(name))
	return aws.ToString(group) + "/" + aws.ToString(name), f.fail
}

func (f *fakeScheduler) CreateSchedule(_ context.Context, in *scheduler.CreateScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, err := f.call("create", in.GroupName, in.Name)
	if err != nil {
		return nil, err
	}
	if _, ok := f.schedules[at]; ok {
		return nil, &types.ConflictException{Message: aws.String("schedule " + at + " already exists")}
	}
	f.schedules[at] = in
	return &scheduler.CreateScheduleOutput{}, nil
}

func (f *fakeScheduler) UpdateSchedule(_ context.Context, in *scheduler.UpdateScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, err := f.call("update", in.GroupName, in.Name)
	if err != nil {
		return nil, err
	}
	if _, ok := f.schedules[at]; !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("schedule " + at + " does not exist")}
	}
	f.schedules[at] = &scheduler.CreateScheduleInput{
		Name: in.Name, GroupName: in.GroupName, ScheduleExpression: in.ScheduleExpression, Description: in.Description,
		Target: in.Target, ScheduleExpressionTimezone: in.ScheduleExpressionTimezone, FlexibleTimeWindow: in.FlexibleTimeWindow,
		ActionAfterCompletion: in.ActionAfterCompletion, State: in.State,
	}
	return &scheduler.UpdateScheduleOutput{}, nil
}

func (f *fakeScheduler) DeleteSchedule(_ context.Context, in *scheduler.DeleteScheduleInput, _ ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, err := f.call("delete", in.GroupName, in.Name)
	if err != nil {
		return nil, err
	}
	if _, ok := f.schedules[at]; !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("schedule " + at + " does not exist")}
	}
	delete(f.schedules, at)
	return &scheduler.DeleteScheduleOutput{}, nil
}

// get returns the schedule of group and name, or nil.
func (f *fakeScheduler) get(group, name string) *scheduler.CreateScheduleInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.schedules[group+"/"+name]
}

func (f *fakeScheduler) callsMade() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// index is a small in-memory projection for the tests, of one shard, that keeps
// what a Projection promises: an opening adds its row unless a row or a settled
// row's marker holds its key, a settlement takes the row out and leaves a marker;
// an ordered kind's record applies only when it is later in its stream than what
// the row reflects, a later opening moving an outstanding row's due time or
// opening a settled one again; an opening of a kind that takes another over
// replaces that kind's outstanding row. Apply fails with fail when it is set.
type index struct {
	kinds deadlines.Kinds
	mu    sync.Mutex
	rows  map[string]entry // by key
	fail  error
}

type entry struct {
	row      deadlines.Row
	settled  bool
	position int64
}

var _ deadlines.Projection = (*index)(nil)

func newIndex(kinds deadlines.Kinds) *index {
	return &index{kinds: kinds, rows: map[string]entry{}}
}

func (x *index) Shards() int { return 1 }

func (x *index) Rows(context.Context, deadlines.Span, func([]deadlines.Row) bool) (int, error) {
	return 0, errors.New("not read by the schedules")
}

func (x *index) Row(_ context.Context, k deadlines.Kind, subject string) (deadlines.Row, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.rows[k.Key(subject)]
	return e.row, ok && !e.settled && e.row.Kind == k.Name, nil
}

func (x *index) Apply(_ context.Context, r deadlines.Record) error {
	if x.fail != nil {
		return x.fail
	}
	changes, err := x.kinds.Changes(r)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range changes {
		key := c.Kind.Key(c.Subject)
		e, exists := x.rows[key]
		open := entry{row: deadlines.Row{Kind: c.Kind.Name, Subject: c.Subject, Due: c.Kind.DueAt(c.Change, r.At)}, position: r.Position}
		switch {
		case c.Kind.Ordered && exists && r.Position <= e.position:
		case c.Settled:
			x.rows[key] = entry{row: e.row, settled: true, position: r.Position}
		case c.Kind.Ordered || !exists || (!e.settled && e.row.Kind == c.Kind.Takes):
			x.rows[key] = open
		}
	}
	return nil
}
