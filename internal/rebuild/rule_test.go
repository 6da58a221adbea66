package rebuild_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/bikerental/bikerental/internal/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/rebuild"
)

func TestPauseRuleDisablesTheRuleAndResumeEnablesIt(t *testing.T) {
	ctx := context.Background()
	client := eventbridge.NewFromConfig(emulatortest.Config(t))
	state := func(name string) types.RuleState {
		t.Helper()
		out, err := client.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return out.State
	}
	for _, initial := range []types.RuleState{types.RuleStateEnabled, types.RuleStateDisabled} {
		name := emulatortest.TableName(t, "sweep-rule")
		if _, err := client.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), ScheduleExpression: aws.String("rate(1 minute)"), State: initial}); err != nil {
			t.Fatal(err)
		}
		resume, err := rebuild.PauseRule(ctx, client, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := state(name); got != types.RuleStateDisabled {
			t.Errorf("%s rule while paused: %s", initial, got)
		}
		for range 2 {
			if err := resume(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := state(name); got != initial {
			t.Errorf("%s rule after resume: %s", initial, got)
		}
	}
	if resume, err := rebuild.PauseRule(ctx, client, "no-such-rule"); err == nil || resume != nil {
		t.Errorf("pausing a missing rule: %v", err)
	}
}
