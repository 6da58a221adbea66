package schedules_test

import (
	"context"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/memory"
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

// index is a projection in memory whose Apply fails with fail when it is set.
type index struct {
	*memory.Index
	fail error
}

func newIndex(kinds deadlines.Kinds) *index { return &index{Index: memory.New(kinds, 2)} }

func (x *index) Apply(ctx context.Context, r deadlines.Record) error {
	if x.fail != nil {
		return x.fail
	}
	return x.Index.Apply(ctx, r)
}
