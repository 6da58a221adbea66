// Package iamtest records what the service's functions ask of AWS, for the
// tests that check their grants: Actions, an AWS SDK middleware, names the IAM
// action and resource of every call (DynamoDB, EventBridge Scheduler, Secrets
// Manager). What the calls cost in request units is counted by the deadlines
// module's counter, package github.com/bikerental/bikerental/deadlines/dynamo/capacity.
package iamtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go/middleware"
)

// Use is one IAM action a call needed, on one resource: what the caller's role must
// grant for the call to be allowed.
type Use struct {
	// Function is the label the recorder's middleware was installed with.
	Function string
	// Action is the IAM action ("dynamodb:PutItem", "iam:PassRole").
	Action string
	// Resource is the ARN the action is authorized on; empty when the recorder does
	// not know how to tell it from the call (a call it has no rule for).
	Resource string
	// Context holds the condition keys IAM evaluates the action with, where they
	// matter (iam:PassedToService for iam:PassRole).
	Context map[string]string
	// Call is the API operation the use came from ("DynamoDB TransactWriteItems").
	Call string
}

func (u Use) String() string {
	s := u.Function + ": " + u.Action + " on " + u.Resource
	if len(u.Context) > 0 {
		keys := slices.Sorted(maps.Keys(u.Context))
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+u.Context[k])
		}
		s += " (" + strings.Join(kv, ", ") + ")"
	}
	return s + " [" + u.Call + "]"
}

// Actions records the IAM actions and resources of every call of a client built with
// its middleware: what each function's role must grant. It knows the calls the
// service's functions make to DynamoDB, EventBridge Scheduler (with the iam:PassRole
// a schedule's target role needs) and Secrets Manager; any other call is recorded
// with an empty Resource, so that a test can refuse what it cannot check. It is safe
// for concurrent use.
type Actions struct {
	// Account is the account id in the ARNs it builds (the region is the client's).
	Account string

	mu   sync.Mutex
	uses []Use
}

// Uses returns what was recorded, in the order the calls ended.
func (a *Actions) Uses() []Use {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Use(nil), a.uses...)
}

// Reset forgets what was recorded.
func (a *Actions) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.uses = nil
}

const actionsID = "capacity.Actions"

// Middleware returns an APIOptions entry that records the actions of every call of a
// client built with it under the label function. It never changes a call. A call is
// recorded whether or not it succeeded: a refused call needed its grant too.
func (a *Actions) Middleware(function string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(actionsID,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
				arn := arns{region: awsmiddleware.GetRegion(ctx), account: a.Account}
				uses := arn.uses(service, op, in.Parameters, out.Result)
				a.mu.Lock()
				for _, u := range uses {
					u.Function, u.Call = function, service+" "+op
					a.uses = append(a.uses, u)
				}
				a.mu.Unlock()
				return out, md, err
			}), middleware.After)
		if err != nil {
			return fmt.Errorf("capacity: %w", err)
		}
		return nil
	}
}

type arns struct{ region, account string }

func (r arns) table(name string) string {
	if strings.HasPrefix(name, "arn:") {
		return name
	}
	return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", r.region, r.account, name)
}

func (r arns) index(table string, index *string) string {
	if index == nil {
		return r.table(table)
	}
	return r.table(table) + "/index/" + *index
}

// uses returns the actions of one call (see Actions).
func (r arns) uses(service, op string, params, result any) []Use {
	one := func(action, resource string) []Use { return []Use{{Action: action, Resource: resource}} }
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return one("dynamodb:GetItem", r.table(aws.ToString(in.TableName)))
	case *dynamodb.PutItemInput:
		return one("dynamodb:PutItem", r.table(aws.ToString(in.TableName)))
	case *dynamodb.UpdateItemInput:
		return one("dynamodb:UpdateItem", r.table(aws.ToString(in.TableName)))
	case *dynamodb.DeleteItemInput:
		return one("dynamodb:DeleteItem", r.table(aws.ToString(in.TableName)))
	case *dynamodb.QueryInput:
		return one("dynamodb:Query", r.index(aws.ToString(in.TableName), in.IndexName))
	case *dynamodb.ScanInput:
		return one("dynamodb:Scan", r.index(aws.ToString(in.TableName), in.IndexName))
	case *dynamodb.DescribeTableInput:
		return one("dynamodb:DescribeTable", r.table(aws.ToString(in.TableName)))
	case *dynamodb.BatchGetItemInput:
		var out []Use
		for _, t := range slices.Sorted(maps.Keys(in.RequestItems)) {
			out = append(out, Use{Action: "dynamodb:BatchGetItem", Resource: r.table(t)})
		}
		return out
	case *dynamodb.BatchWriteItemInput:
		var out []Use
		for _, t := range slices.Sorted(maps.Keys(in.RequestItems)) {
			out = append(out, Use{Action: "dynamodb:BatchWriteItem", Resource: r.table(t)})
		}
		return out
	case *dynamodb.TransactWriteItemsInput:
		// IAM authorizes each item of a transaction as the single-item action it is
		// (DynamoDB Developer Guide, "Using IAM with DynamoDB transactions").
		var out []Use
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, Use{Action: "dynamodb:PutItem", Resource: r.table(aws.ToString(it.Put.TableName))})
			case it.Update != nil:
				out = append(out, Use{Action: "dynamodb:UpdateItem", Resource: r.table(aws.ToString(it.Update.TableName))})
			case it.Delete != nil:
				out = append(out, Use{Action: "dynamodb:DeleteItem", Resource: r.table(aws.ToString(it.Delete.TableName))})
			case it.ConditionCheck != nil:
				out = append(out, Use{Action: "dynamodb:ConditionCheckItem", Resource: r.table(aws.ToString(it.ConditionCheck.TableName))})
			}
		}
		return out
	case *dynamodb.TransactGetItemsInput:
		var out []Use
		for _, it := range in.TransactItems {
			if it.Get != nil {
				out = append(out, Use{Action: "dynamodb:GetItem", Resource: r.table(aws.ToString(it.Get.TableName))})
			}
		}
		return out
	case *scheduler.CreateScheduleInput:
		out := one("scheduler:CreateSchedule", r.schedule(in.GroupName, in.Name))
		if in.Target != nil && in.Target.RoleArn != nil {
			out = append(out, r.passRole(*in.Target.RoleArn))
		}
		return out
	case *scheduler.UpdateScheduleInput:
		out := one("scheduler:UpdateSchedule", r.schedule(in.GroupName, in.Name))
		if in.Target != nil && in.Target.RoleArn != nil {
			out = append(out, r.passRole(*in.Target.RoleArn))
		}
		return out
	case *scheduler.DeleteScheduleInput:
		return one("scheduler:DeleteSchedule", r.schedule(in.GroupName, in.Name))
	case *scheduler.GetScheduleInput:
		return one("scheduler:GetSchedule", r.schedule(in.GroupName, in.Name))
	case *secretsmanager.GetSecretValueInput:
		// The secret's ARN carries a suffix its name does not: the answer says it.
		resource := aws.ToString(in.SecretId)
		if res, ok := result.(*secretsmanager.GetSecretValueOutput); ok && res.ARN != nil {
			resource = *res.ARN
		} else if !strings.HasPrefix(resource, "arn:") {
			resource = fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-??????", r.region, r.account, resource)
		}
		return one("secretsmanager:GetSecretValue", resource)
	}
	return one(strings.ToLower(strings.ReplaceAll(service, " ", ""))+":"+op, "")
}

func (r arns) schedule(group, name *string) string {
	g := aws.ToString(group)
	if g == "" {
		g = "default"
	}
	return fmt.Sprintf("arn:aws:scheduler:%s:%s:schedule/%s/%s", r.region, r.account, g, aws.ToString(name))
}

func (r arns) passRole(role string) Use {
	return Use{Action: "iam:PassRole", Resource: role, Context: map[string]string{"iam:PassedToService": "scheduler.amazonaws.com"}}
}

// Sorted returns uses sorted and without repeats (by String).
func Sorted(uses []Use) []Use {
	seen := map[string]bool{}
	var out []Use
	for _, u := range uses {
		if s := u.String(); !seen[s] {
			seen[s] = true
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
