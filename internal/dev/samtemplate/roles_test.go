package samtemplate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/samtemplate"
)

// streamLabel is the label of the Events table's stream in the tests' ARNs: "today's"
// stream. A stream turned off and on again has another.
const streamLabel = "2026-12-01T00:00:00.000"

// env returns the Env of the template with params over the defaults, whose resources
// give ARNs as AWS would, named as the template names them, except for the tables
// and schedule group named in local (by logical id).
func env(tpl *samtemplate.Template, params, local map[string]string) samtemplate.Env {
	e := samtemplate.Env{Params: params}
	arn := func(service, rest string) string {
		return fmt.Sprintf("arn:%s:%s:%s:%s:%s", samtemplate.Partition, service, samtemplate.Region, samtemplate.AccountID, rest)
	}
	e.Resource = func(expr string) (any, bool) {
		id, attr, _ := strings.Cut(expr, ".")
		r := tpl.Resource(id)
		name := func(prop string) string {
			if v, ok := local[id]; ok {
				return v
			}
			v, err := tpl.Eval(r.Get("Properties", prop), e)
			if err != nil {
				return id
			}
			s, _ := v.(string)
			return s
		}
		switch typ := r.Get("Type").Str(); typ + "." + attr {
		case "AWS::DynamoDB::Table.":
			return name("TableName"), true
		case "AWS::DynamoDB::Table.Arn":
			return arn("dynamodb", "table/"+name("TableName")), true
		case "AWS::DynamoDB::Table.StreamArn":
			return arn("dynamodb", "table/"+name("TableName")+"/stream/"+streamLabel), true
		case "AWS::SQS::Queue.":
			return "https://sqs." + samtemplate.Region + ".amazonaws.com/" + samtemplate.AccountID + "/" + name("QueueName"), true
		case "AWS::SQS::Queue.Arn":
			return arn("sqs", name("QueueName")), true
		case "AWS::SQS::Queue.QueueName":
			return name("QueueName"), true
		case "AWS::Logs::LogGroup.":
			return name("LogGroupName"), true
		case "AWS::Logs::LogGroup.Arn": // as CloudFormation gives it, with ":*"
			return arn("logs", "log-group:"+name("LogGroupName")+":*"), true
		case "AWS::Serverless::Function.":
			return name("FunctionName"), true
		case "AWS::Serverless::Function.Arn":
			return arn("lambda", "function:"+name("FunctionName")), true
		case "AWS::IAM::Role.Arn":
			return fmt.Sprintf("arn:%s:iam::%s:role/%s", samtemplate.Partition, samtemplate.AccountID, id), true
		case "AWS::Scheduler::ScheduleGroup.", "AWS::Scheduler::Schedule.", "AWS::Events::Rule.":
			return name("Name"), true
		case "AWS::Events::Rule.Arn":
			return arn("events", "rule/"+name("Name")), true
		case "AWS::Cognito::UserPool.":
			return samtemplate.Region + "_pool", true
		case "AWS::Cognito::UserPoolClient.":
			return "client-" + id, true
		case "AWS::Cognito::UserPoolDomain.":
			return name("Domain"), true
		case "AWS::Cognito::UserPoolGroup.":
			return name("GroupName"), true
		case "AWS::Serverless::HttpApi.":
			return "api", true
		}
		return nil, false
	}
	return e
}

// statements returns what a function's role grants in e.
func statements(t *testing.T, tpl *samtemplate.Template, function string, e samtemplate.Env) []samtemplate.Statement {
	t.Helper()
	st, err := tpl.FunctionStatements(function, e)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func allowed(st []samtemplate.Statement, action, resource string, context map[string]string) bool {
	return slices.ContainsFunc(st, func(s samtemplate.Statement) bool { return s.Allows(action, resource, context) })
}

// TestFunctionsHaveRolesOfTheirOwn checks that every function runs with a role the
// template writes out (so that SAM adds no AWSLambdaBasicExecutionRole, whose log
// permissions are on "*"), one role per function, that only Lambda may assume, and
// whose log permissions are on the function's own log group only, without
// logs:CreateLogGroup: the template creates the groups.
func TestFunctionsHaveRolesOfTheirOwn(t *testing.T) {
	tpl := load(t)
	e := env(tpl, nil, nil)
	roles := map[string]string{}
	for _, fn := range tpl.Resources("AWS::Serverless::Function") {
		props := tpl.Resource(fn).Get("Properties")
		for _, k := range []string{"Policies", "RolePath", "PermissionsBoundary"} {
			if props.Get(k).Exists() {
				t.Errorf("%s has %s: SAM would make its role", fn, k)
			}
		}
		role, err := tpl.RoleOf(fn)
		if err != nil {
			t.Error(err)
			continue
		}
		if other, dup := roles[role]; dup {
			t.Errorf("%s and %s share the role %s", fn, other, role)
		}
		roles[role] = fn
		trust := tpl.Resource(role).Get("Properties", "AssumeRolePolicyDocument", "Statement").Items()
		if len(trust) != 1 || trust[0].Get("Principal", "Service").Str() != "lambda.amazonaws.com" || trust[0].Get("Action").Str() != "sts:AssumeRole" {
			t.Errorf("%s: only Lambda may assume %s", fn, role)
		}
		group, err := tpl.Eval(props.Get("LoggingConfig", "LogGroup"), e)
		if err != nil {
			t.Fatal(err)
		}
		stream := fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:log-stream:2026/12/01/[$LATEST]0123", samtemplate.Region, samtemplate.AccountID, group)
		st := statements(t, tpl, fn, e)
		for _, a := range []string{"logs:CreateLogStream", "logs:PutLogEvents"} {
			if !allowed(st, a, stream, nil) {
				t.Errorf("%s may not %s in its log group %s", fn, a, group)
			}
		}
		for _, s := range st {
			for _, a := range s.Actions {
				if !strings.HasPrefix(strings.ToLower(a), "logs:") {
					continue
				}
				if !slices.Contains([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, a) {
					t.Errorf("%s: %s grants %s; a function only writes its own log streams", fn, s.Sid, a)
				}
				for _, r := range s.Resources {
					if r != fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:*", samtemplate.Region, samtemplate.AccountID, group) {
						t.Errorf("%s: %s grants %s on %s, not its own log group", fn, s.Sid, a, r)
					}
				}
			}
		}
	}
}

// TestStreamConsumersMayReadEveryStreamOfTheTable checks the stream permissions as
// the DynamoDB Developer Guide writes them for a Lambda function reading a stream:
// DescribeStream, GetRecords, GetShardIterator and ListStreams on
// table/<Events>/stream/*, so that a stream re-enabled under a new ARN is readable.
func TestStreamConsumersMayReadEveryStreamOfTheTable(t *testing.T) {
	tpl := load(t)
	e := env(tpl, nil, nil)
	for _, m := range tpl.Resources("AWS::Lambda::EventSourceMapping") {
		fn := tpl.Resource(m).Get("Properties", "FunctionName").Str()
		table, _ := e.Resource("EventsTable.Arn")
		st := statements(t, tpl, fn, e)
		for _, label := range []string{streamLabel, "2027-06-30T12:00:00.000"} {
			for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"} {
				if !allowed(st, a, fmt.Sprint(table, "/stream/", label), nil) {
					t.Errorf("%s (mapping %s) may not %s on the Events table's stream %s", fn, m, a, label)
				}
			}
		}
	}
}

// TestGrantsFollowTheMode checks least privilege per mode: the projector's schedules
// and iam:PassRole and the sweep's GetItem with DeadlineMode=precise only, and the
// scheduler's role, and each of its dead-letter queues, only where a schedule uses
// them.
func TestGrantsFollowTheMode(t *testing.T) {
	tpl := load(t)
	for _, mode := range []struct {
		deadlines, trigger string
	}{{"sweep", "scheduler"}, {"sweep", "rule"}, {"precise", "scheduler"}, {"precise", "rule"}} {
		t.Run(mode.deadlines+"/"+mode.trigger, func(t *testing.T) {
			e := env(tpl, map[string]string{"DeadlineMode": mode.deadlines, "SweepTrigger": mode.trigger}, nil)
			precise := mode.deadlines == "precise"
			group, _ := e.Resource("DeadlineScheduleGroup")
			schedule := fmt.Sprintf("arn:aws:scheduler:%s:%s:schedule/%s/payment-x", samtemplate.Region, samtemplate.AccountID, group)
			role, _ := e.Resource("SweepSchedulerRole.Arn")
			pending, _ := e.Resource("DeadlinesTable.Arn")
			projector, sweep := statements(t, tpl, "ProjectorFunction", e), statements(t, tpl, "SweepFunction", e)
			for what, got := range map[string]bool{
				"the projector may create schedules":          allowed(projector, "scheduler:CreateSchedule", schedule, nil),
				"the projector may delete schedules":          allowed(projector, "scheduler:DeleteSchedule", schedule, nil),
				"the projector may pass the scheduler's role": allowed(projector, "iam:PassRole", fmt.Sprint(role), map[string]string{"iam:PassedToService": "scheduler.amazonaws.com"}),
				"the sweep may read a pending row":            allowed(sweep, "dynamodb:GetItem", fmt.Sprint(pending), nil),
			} {
				if got != precise {
					t.Errorf("DeadlineMode=%s: %s: %v", mode.deadlines, what, got)
				}
			}
			for _, st := range [][]samtemplate.Statement{projector, sweep} {
				for _, s := range st {
					if s.Matches("iam:PassRole", fmt.Sprint(role)) && !s.Allows("iam:PassRole", fmt.Sprint(role), map[string]string{"iam:PassedToService": "scheduler.amazonaws.com"}) {
						t.Errorf("%s passes the role to another service than Scheduler", s)
					}
				}
			}
			schedulerRole := tpl.Resource("SweepSchedulerRole")
			present, err := tpl.Present(schedulerRole, e)
			if err != nil {
				t.Fatal(err)
			}
			if want := precise || mode.trigger == "scheduler"; present != want {
				t.Fatalf("the scheduler's role exists: %v, want %v", present, want)
			}
			if !present {
				return
			}
			st, err := tpl.Statements("SweepSchedulerRole", e)
			if err != nil {
				t.Fatal(err)
			}
			for queue, want := range map[string]bool{"SweepDeadLetterQueue": mode.trigger == "scheduler", "DeadlineDeadLetterQueue": precise} {
				q, _ := e.Resource(queue + ".Arn")
				if got := allowed(st, "sqs:SendMessage", fmt.Sprint(q), nil); got != want {
					t.Errorf("the scheduler may send to %s: %v, want %v", queue, got, want)
				}
			}
		})
	}
}
