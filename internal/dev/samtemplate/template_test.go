package samtemplate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/samtemplate"
	"github.com/bikerental/bikerental/internal/ports/httpapi"
	"github.com/bikerental/bikerental/internal/ports/lambda/sweepmetrics"
	"github.com/bikerental/bikerental/internal/testkit/apicontract"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
	"github.com/bikerental/bikerental/internal/wiring/projectorfn"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var root = filepath.Join("..", "..", "..")

func load(t *testing.T) *samtemplate.Template {
	t.Helper()
	tpl, err := samtemplate.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// testNames names the tables and the schedule group as the template tests' functions
// find them.
var testNames = map[string]string{"EventsTable": "events-table", "DeadlinesTable": "deadlines-table", "DeadlineScheduleGroup": "deadline-group"}

func keySchema(n samtemplate.Node) []string {
	var out []string
	for _, k := range n.Items() {
		out = append(out, k.Get("AttributeName").Str()+":"+k.Get("KeyType").Str())
	}
	return out
}

func attributes(n samtemplate.Node) []string {
	var out []string
	for _, a := range n.Items() {
		out = append(out, a.Get("AttributeName").Str()+":"+a.Get("AttributeType").Str())
	}
	sort.Strings(out)
	return out
}

func wantKeys(def *dynamodb.CreateTableInput) (keys, attrs []string) {
	for _, k := range def.KeySchema {
		keys = append(keys, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
	}
	for _, a := range def.AttributeDefinitions {
		attrs = append(attrs, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
	}
	sort.Strings(attrs)
	return keys, attrs
}

func TestTablesAgreeWithTheCode(t *testing.T) {
	tpl := load(t)
	for _, tc := range []struct {
		logicalID string
		def       *dynamodb.CreateTableInput
	}{
		{"EventsTable", schema.Events("x")},
		{"DeadlinesTable", schema.Deadlines("x")},
	} {
		props := tpl.Resource(tc.logicalID).Get("Properties")
		if !props.Exists() {
			t.Fatalf("template has no %s", tc.logicalID)
		}
		keys, attrs := wantKeys(tc.def)
		if got := keySchema(props.Get("KeySchema")); !slices.Equal(got, keys) {
			t.Errorf("%s key schema %v, code says %v", tc.logicalID, got, keys)
		}
		if got := attributes(props.Get("AttributeDefinitions")); !slices.Equal(got, attrs) {
			t.Errorf("%s attributes %v, code says %v", tc.logicalID, got, attrs)
		}
		if got := props.Get("BillingMode").Str(); got != string(tc.def.BillingMode) {
			t.Errorf("%s billing %s, code says %s", tc.logicalID, got, tc.def.BillingMode)
		}
		var wantStream string
		if tc.def.StreamSpecification != nil {
			wantStream = string(tc.def.StreamSpecification.StreamViewType)
		}
		if got := props.Get("StreamSpecification", "StreamViewType").Str(); got != wantStream {
			t.Errorf("%s stream view %q, code says %q", tc.logicalID, got, wantStream)
		}
		var got []string
		for _, gsi := range props.Get("GlobalSecondaryIndexes").Items() {
			got = append(got, fmt.Sprint(gsi.Get("IndexName").Str(), keySchema(gsi.Get("KeySchema")), gsi.Get("Projection", "ProjectionType").Str()))
		}
		var want []string
		for _, gsi := range tc.def.GlobalSecondaryIndexes {
			var ks []string
			for _, k := range gsi.KeySchema {
				ks = append(ks, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
			}
			want = append(want, fmt.Sprint(aws.ToString(gsi.IndexName), ks, string(gsi.Projection.ProjectionType)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s indexes %v, code says %v", tc.logicalID, got, want)
		}
	}
	ttl := tpl.Resource("DeadlinesTable").Get("Properties", "TimeToLiveSpecification")
	want := schema.DeadlinesTTL("x").TimeToLiveSpecification
	if ttl.Get("AttributeName").Str() != aws.ToString(want.AttributeName) || ttl.Get("Enabled").Str() != "true" {
		t.Errorf("Deadlines TTL on %q (enabled %s), code uses %q", ttl.Get("AttributeName").Str(), ttl.Get("Enabled").Str(), aws.ToString(want.AttributeName))
	}
	events := tpl.Resource("EventsTable")
	for _, path := range [][]string{{"DeletionPolicy"}, {"UpdateReplacePolicy"}} {
		if events.Get(path...).Str() != "Retain" {
			t.Errorf("EventsTable %s is %q, want Retain", path[0], events.Get(path...).Str())
		}
	}
	for _, prop := range [][]string{{"PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"}, {"DeletionProtectionEnabled"}} {
		if events.Get(append([]string{"Properties"}, prop...)...).Str() != "true" {
			t.Errorf("EventsTable %v is not true", prop)
		}
	}
}

var secretOnce sync.Once

// recorder is a Getenv that answers from the template's environment and notes every
// name asked for.
type recorder struct {
	mu   sync.Mutex
	env  map[string]string
	read map[string]bool
}

func (r *recorder) getenv(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read[name] = true
	return r.env[name]
}

// functions maps each function's directory under functions/ to the builder its main
// runs, from the one table of functions.
var functions = func() map[string]wiring.Builder {
	out := map[string]wiring.Builder{}
	for _, f := range lambdas.All() {
		out[f.Name] = f.Build
	}
	return out
}()

func logicalID(function string) string {
	return strings.ToUpper(function[:1]) + function[1:] + "Function"
}

func TestFunctionsReadExactlyTheirTemplateEnvironment(t *testing.T) {
	tpl := load(t)
	cfg := emulatortest.Config(t)
	secretName, _ := tpl.Root().Get("Parameters", "WebhookSecretName", "Default").Resolve(nil)
	secretOnce.Do(func() {
		_, err := secretsmanager.NewFromConfig(cfg).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
			Name: aws.String(secretName), SecretString: aws.String("a-webhook-secret-for-the-template-test"),
		})
		var exists *smtypes.ResourceExistsException
		if err != nil && !errors.As(err, &exists) {
			t.Fatal(err)
		}
	})
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	globals := tpl.Root().Get("Globals", "Function")
	templateEnv := env(tpl, nil, testNames)
	if len(functions) != len(tpl.Resources("AWS::Serverless::Function")) {
		t.Errorf("the code has %d functions, the template %d", len(functions), len(tpl.Resources("AWS::Serverless::Function")))
	}
	for function, build := range functions {
		t.Run(function, func(t *testing.T) {
			id := logicalID(function)
			fn := tpl.Resource(id)
			if fn.Get("Type").Str() != "AWS::Serverless::Function" {
				t.Fatalf("template has no function %s for functions/%s", id, function)
			}
			prop := func(name string) string {
				if v := fn.Get("Properties", name).Str(); v != "" {
					return v
				}
				return globals.Get(name).Str()
			}
			if prop("Runtime") != "provided.al2023" || prop("Handler") != "bootstrap" {
				t.Errorf("%s: runtime %q handler %q", id, prop("Runtime"), prop("Handler"))
			}
			if arch := globals.Get("Architectures").Items(); len(arch) != 1 || arch[0].Str() != "arm64" {
				t.Errorf("functions are not arm64 only")
			}
			main, err := os.ReadFile(filepath.Join(root, "functions", function, "main.go"))
			if err != nil || !regexp.MustCompile(`wiring\.Run\((wiring|[a-z]+fn)\.`+id+`\)`).Match(main) {
				t.Errorf("functions/%s/main.go does not run the %s builder (%v)", function, id, err)
			}
			if fn.Get("Metadata", "BuildMethod").Str() != "makefile" {
				t.Errorf("%s: BuildMethod is not makefile", id)
			}
			if !strings.Contains(string(makefile), "\nbuild-"+id+":") {
				t.Errorf("the Makefile has no build-%s target", id)
			}
			if fn.Get("Properties", "LoggingConfig", "LogGroup").Tag() != "!Ref" {
				t.Errorf("%s: no log group of its own (with retention)", id)
			}

			env := map[string]string{}
			for _, vars := range []samtemplate.Node{globals.Get("Environment", "Variables"), fn.Get("Properties", "Environment", "Variables")} {
				for _, k := range vars.Keys() {
					v, err := tpl.Eval(vars.Get(k), templateEnv)
					if err != nil {
						t.Fatalf("%s: %s: %v", id, k, err)
					}
					env[k] = fmt.Sprint(v)
				}
			}
			rec := &recorder{env: env, read: map[string]bool{}}
			if _, err := build(context.Background(), cfg, rec.getenv, slog.New(slog.DiscardHandler), io.Discard); err != nil {
				t.Fatalf("%s does not start with the template's environment %v: %v", id, env, err)
			}
			var defined, read []string
			for k := range env {
				defined = append(defined, k)
			}
			for k := range rec.read {
				read = append(read, k)
			}
			sort.Strings(defined)
			sort.Strings(read)
			if !slices.Equal(defined, read) {
				t.Errorf("%s: the template sets %v, the code reads %v", id, defined, read)
			}
		})
	}
}

// TestRoutesAgreeWithTheAPI checks that the template declares every route the
// handler serves, and no other, each with the gateway authorization its access
// needs: no authorizer for public routes and webhooks, the JWT authorizer for renter
// routes, and the JWT authorizer with the operator scope for operator routes.
func TestRoutesAgreeWithTheAPI(t *testing.T) {
	tpl := load(t)
	authorizers := tpl.Resource("HttpApi").Get("Properties", "Auth")
	if got := authorizers.Get("DefaultAuthorizer").Str(); got != "TokenAuthorizer" {
		t.Errorf("the HTTP API's default authorizer is %q, want TokenAuthorizer, so that a route without Auth is closed", got)
	}
	jwt := authorizers.Get("Authorizers", "TokenAuthorizer")
	if jwt.Get("IdentitySource").Str() != "$request.header.Authorization" || !jwt.Get("JwtConfiguration", "issuer").Exists() || !jwt.Get("JwtConfiguration", "audience").Exists() {
		t.Errorf("TokenAuthorizer is not a JWT authorizer on the Authorization header with an issuer and audience")
	}
	got := map[string]httpapi.Access{}
	for _, r := range tpl.Routes("CommandFunction") {
		route := r.Method + " " + r.Path
		auth := r.Properties.Get("Auth")
		switch scopes := auth.Get("AuthorizationScopes").Items(); {
		case auth.Get("Authorizer").Str() == "NONE" && len(scopes) == 0:
			got[route] = httpapi.Public
		case auth.Get("Authorizer").Str() == "TokenAuthorizer" && len(scopes) == 0:
			got[route] = httpapi.Renter
		case auth.Get("Authorizer").Str() == "TokenAuthorizer" && len(scopes) == 1 && scopes[0].Tag() == "!Ref" && scopes[0].Str() == "OperatorScope":
			got[route] = httpapi.Operator
		default:
			t.Errorf("route %s: its Auth is none of the three the API's routes need", route)
		}
	}
	want := map[string]httpapi.Access{}
	for _, r := range httpapi.Routes() {
		access := r.Access
		if access == httpapi.Webhook { // signed, not authorized by the gateway
			access = httpapi.Public
		}
		want[r.Method+" "+r.Pattern] = access
	}
	for route, access := range want {
		declared, ok := got[route]
		switch {
		case !ok:
			t.Errorf("the template lacks route %s", route)
		case declared != access:
			t.Errorf("route %s: the template authorizes it as %s, the API serves it as %s", route, declared, access)
		}
	}
	for route := range got {
		if _, ok := want[route]; !ok {
			t.Errorf("the template has route %s that the API does not serve", route)
		}
	}
}

func TestStreamConsumersHaveSomewhereToFail(t *testing.T) {
	tpl := load(t)
	mappings := tpl.Resources("AWS::Lambda::EventSourceMapping")
	if len(mappings) != 2 {
		t.Fatalf("%d consumers of the Events stream, want exactly 2 (process, projector)", len(mappings))
	}
	for _, id := range mappings {
		p := tpl.Resource(id).Get("Properties")
		if v := p.Get("EventSourceArn").Str(); p.Get("EventSourceArn").Tag() != "!GetAtt" || v != "EventsTable.StreamArn" {
			t.Errorf("%s reads %s, want the Events stream", id, v)
		}
		types := p.Get("FunctionResponseTypes").Items()
		if len(types) != 1 || types[0].Str() != "ReportBatchItemFailures" {
			t.Errorf("%s does not report batch item failures", id)
		}
		for _, k := range []string{"BatchSize", "MaximumRetryAttempts", "MaximumRecordAgeInSeconds"} {
			if p.Get(k).Str() == "" {
				t.Errorf("%s has no %s", id, k)
			}
		}
		if p.Get("BisectBatchOnFunctionError").Str() != "true" {
			t.Errorf("%s does not bisect failing batches", id)
		}
		if !p.Get("DestinationConfig", "OnFailure", "Destination").Exists() {
			t.Errorf("%s has no on-failure destination", id)
		}
	}
}

// TestStreamRetryBudgetsAreBoundedByAge keeps the mappings' retry budgets as
// RELIABILITY.md ("Retry budgets") derives them: no count limit, so that a record
// is retried for as long as its age allows however fast its attempts fail; an age
// limit that leaves a failing start at least ten attempts at the function's full
// timeout, and that the stream's 24-hour retention does not cut short; and the
// local stack's mappings on the same age.
func TestStreamRetryBudgetsAreBoundedByAge(t *testing.T) {
	tpl := load(t)
	for id, fn := range map[string]string{"ProcessStreamMapping": "ProcessFunction", "ProjectorStreamMapping": "ProjectorFunction"} {
		p := tpl.Resource(id).Get("Properties")
		if got := p.Get("MaximumRetryAttempts").Str(); got != "-1" {
			t.Errorf("%s: MaximumRetryAttempts %s, want -1 (bounded by the record's age)", id, got)
		}
		age, err := strconv.Atoi(p.Get("MaximumRecordAgeInSeconds").Str())
		if err != nil {
			t.Fatalf("%s: MaximumRecordAgeInSeconds: %v", id, err)
		}
		timeout, err := strconv.Atoi(tpl.Resource(fn).Get("Properties", "Timeout").Str())
		if err != nil {
			t.Fatalf("%s: Timeout: %v", fn, err)
		}
		if age < 10*timeout || age > 24*3600 {
			t.Errorf("%s: MaximumRecordAgeInSeconds %d, want between ten %s timeouts (%ds) and the stream's 24h retention", id, age, fn, 10*timeout)
		}
		if time.Duration(age)*time.Second != local.DefaultMaxRecordAge {
			t.Errorf("%s: MaximumRecordAgeInSeconds %d, the local stack's mappings %v", id, age, local.DefaultMaxRecordAge)
		}
	}
}

// TestStreamConsumersAreWokenOnlyForWhatTheyHandle checks each event source
// mapping's filter against internal/app/eventfilter, which the local pollers use too.
func TestStreamConsumersAreWokenOnlyForWhatTheyHandle(t *testing.T) {
	tpl := load(t)
	for id, consumer := range map[string]string{"ProcessStreamMapping": eventfilter.Process, "ProjectorStreamMapping": eventfilter.Projector} {
		filters := tpl.Resource(id).Get("Properties", "FilterCriteria", "Filters").Items()
		if len(filters) != 1 {
			t.Errorf("%s has %d filters, want 1", id, len(filters))
			continue
		}
		var got, want any
		if err := json.Unmarshal([]byte(filters[0].Get("Pattern").Str()), &got); err != nil {
			t.Errorf("%s: the pattern is not JSON: %v", id, err)
		}
		json.Unmarshal([]byte(schema.StreamFilter(eventfilter.Types(consumer))), &want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s filters %v, the %s acts on %v", id, got, consumer, want)
		}
	}
}

// TestSweepTriggers checks the two ways the template runs the sweep, chosen by
// SweepTrigger: an EventBridge Scheduler schedule (the default) or an EventBridge
// rule, each with retries and a dead-letter queue, each sending an input from which
// the sweep takes its "now".
func TestSweepTriggers(t *testing.T) {
	tpl := load(t)
	params := tpl.Root().Get("Parameters")
	if params.Get("SweepTrigger", "Default").Str() != "scheduler" {
		t.Errorf("the default sweep trigger is %q, want scheduler", params.Get("SweepTrigger", "Default").Str())
	}
	fn := tpl.Resource("SweepFunction").Get("Properties")
	if fn.Get("Events").Exists() {
		t.Error("the sweep function has SAM events; its triggers are resources chosen by SweepTrigger")
	}
	reserved := fn.Get("ReservedConcurrentExecutions")
	if items := reserved.Items(); reserved.Tag() != "!If" || len(items) != 3 || items[0].Str() != "PreciseDeadlines" || items[2].Str() != "1" {
		t.Error("periodic sweeps may run more than once at a time")
	}
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, trigger := range []struct {
		id, typ, condition string
		target             samtemplate.Node
		input              string
	}{
		{"SweepSchedule", "AWS::Scheduler::Schedule", "SweepOnScheduler", tpl.Resource("SweepSchedule").Get("Properties", "Target"),
			strings.ReplaceAll(tpl.Resource("SweepSchedule").Get("Properties", "Target", "Input").Str(), "<aws.scheduler.scheduled-time>", at.Format(time.RFC3339))},
		{"SweepRule", "AWS::Events::Rule", "SweepOnRule", tpl.Resource("SweepRule").Get("Properties", "Targets").Items()[0],
			`{"version":"0","id":"1","detail-type":"Scheduled Event","source":"aws.events","time":"` + at.Format(time.RFC3339) + `","detail":{}}`},
	} {
		r := tpl.Resource(trigger.id)
		if r.Get("Type").Str() != trigger.typ || r.Get("Condition").Str() != trigger.condition {
			t.Errorf("%s: type %s, condition %s", trigger.id, r.Get("Type").Str(), r.Get("Condition").Str())
		}
		if rate, _ := r.Get("Properties", "ScheduleExpression").Resolve(nil); rate != "rate(1 minute)" {
			t.Errorf("%s: default sweep rate %q, want rate(1 minute)", trigger.id, rate)
		}
		for _, k := range [][]string{{"RetryPolicy"}, {"DeadLetterConfig", "Arn"}} {
			if !trigger.target.Get(k...).Exists() {
				t.Errorf("%s has no %v", trigger.id, k)
			}
		}
		if trigger.target.Get("Arn").Tag() != "!GetAtt" || trigger.target.Get("Arn").Str() != "SweepFunction.Arn" {
			t.Errorf("%s does not invoke the sweep function", trigger.id)
		}
		now, err := deadlines.NowFrom([]byte(trigger.input), at.Add(time.Second), deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{}))
		if err != nil || !now.Equal(at) {
			t.Errorf("%s: the input %s gives now = %v, %v; want %v", trigger.id, trigger.input, now, err, at)
		}
	}
	if !tpl.Resource("SweepSchedule").Get("Properties", "Target", "RoleArn").Exists() {
		t.Error("the sweep's schedule has no role")
	}
	perm := tpl.Resource("SweepRulePermission")
	if perm.Get("Condition").Str() != "SweepOnRule" || perm.Get("Properties", "Principal").Str() != "events.amazonaws.com" {
		t.Error("the rule may not invoke the sweep function")
	}
}

// TestPreciseDeadlines checks what precise deadlines need: the projector may create
// and delete schedules in the deadlines' group only and pass the scheduler's role, and
// it starts with DeadlineMode=precise and the template's settings.
func TestPreciseDeadlines(t *testing.T) {
	tpl := load(t)
	if tpl.Root().Get("Parameters", "DeadlineMode", "Default").Str() != "sweep" {
		t.Error("precise deadlines are not opt-in")
	}
	projector := tpl.Resource("ProjectorFunction").Get("Properties")
	precise := env(tpl, map[string]string{"DeadlineMode": "precise"}, testNames)
	granted := map[string][]string{}
	for _, st := range statements(t, tpl, "ProjectorFunction", precise) {
		for _, a := range st.Actions {
			granted[a] = append(granted[a], st.Resources...)
		}
	}
	for _, a := range []string{"scheduler:CreateSchedule", "scheduler:DeleteSchedule"} {
		if len(granted[a]) != 1 || !strings.HasSuffix(granted[a][0], ":schedule/deadline-group/*") {
			t.Errorf("the projector's %s is on %q, want the deadlines' group only", a, granted[a])
		}
	}
	if role, _ := precise.Resource("SweepSchedulerRole.Arn"); !slices.Equal(granted["iam:PassRole"], []string{fmt.Sprint(role)}) {
		t.Errorf("the projector may pass %v, want the scheduler's role only", granted["iam:PassRole"])
	}
	env := map[string]string{}
	vars := projector.Get("Environment", "Variables")
	for _, k := range vars.Keys() {
		v, err := tpl.Eval(vars.Get(k), precise)
		if err != nil {
			t.Fatal(err)
		}
		env[k] = fmt.Sprint(v)
	}
	if env["DEADLINE_MODE"] != "precise" || env["DEADLINE_ROLE_ARN"] == "" {
		t.Errorf("with DeadlineMode=precise the projector has DEADLINE_MODE=%q and DEADLINE_ROLE_ARN=%q", env["DEADLINE_MODE"], env["DEADLINE_ROLE_ARN"])
	}
	if _, err := projectorfn.ProjectorFunction(context.Background(), emulatortest.Config(t), func(k string) string { return env[k] }, slog.New(slog.DiscardHandler), io.Discard); err != nil {
		t.Errorf("the projector does not start in precise mode with the template's settings: %v", err)
	}
	group := tpl.Resource("DeadlineScheduleGroup")
	if group.Get("Type").Str() != "AWS::Scheduler::ScheduleGroup" {
		t.Error("no schedule group for the deadlines")
	}
}

func TestLeastPrivilege(t *testing.T) {
	tpl := load(t)
	var walk func(path string, n samtemplate.Node)
	walk = func(path string, n samtemplate.Node) {
		for _, k := range n.Keys() {
			child := n.Get(k)
			switch {
			case k == "Resource" && child.Str() == "*":
				t.Errorf("%s grants on Resource \"*\"", path)
			case k == "Action":
				actions := child.Items()
				if len(actions) == 0 {
					actions = []samtemplate.Node{child}
				}
				for _, a := range actions {
					if strings.HasSuffix(a.Str(), ":*") || a.Str() == "*" {
						t.Errorf("%s grants %s", path, a.Str())
					}
				}
			}
			walk(path+"."+k, child)
		}
		for i, item := range n.Items() {
			walk(fmt.Sprintf("%s[%d]", path, i), item)
		}
	}
	walk("Resources", tpl.Root().Get("Resources"))
}

var override = regexp.MustCompile(`([A-Za-z0-9]+)=\\"`)

// TestSamconfigOverridesTemplateParameters checks that every stage's parameter
// overrides name parameters the template has.
func TestSamconfigOverridesTemplateParameters(t *testing.T) {
	tpl := load(t)
	b, err := os.ReadFile(filepath.Join(root, "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	params := tpl.Root().Get("Parameters")
	stages := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "parameter_overrides") {
			continue
		}
		stages++
		for _, m := range override.FindAllStringSubmatch(line, -1) {
			if !params.Get(m[1]).Exists() {
				t.Errorf("samconfig.toml overrides %s, which template.yaml does not declare", m[1])
			}
		}
	}
	if stages < 2 {
		t.Errorf("samconfig.toml has %d stages with parameter overrides, want a default and at least one more", stages)
	}
}

// TestTheOpenAPIDocumentDescribesEveryRoute checks the third side of the contract:
// api/openapi.yaml describes exactly the routes the handler serves (the test above
// checks the template against the same table), each with the security its access
// needs.
func TestTheOpenAPIDocumentDescribesEveryRoute(t *testing.T) {
	doc := apicontract.MustLoad(t)
	var want []string
	access := map[string]httpapi.Access{}
	for _, r := range httpapi.Routes() {
		key := r.Method + " " + r.Pattern
		want = append(want, key)
		access[key] = r.Access
	}
	slices.Sort(want)
	if got := doc.Routes(); !slices.Equal(got, want) {
		t.Fatalf("api/openapi.yaml describes %v, the handler serves %v", got, want)
	}
	for key, a := range access {
		method, path, _ := strings.Cut(key, " ")
		op := doc.Document().Paths.Find(path).GetOperation(method)
		var schemes []string
		if op.Security != nil {
			for _, req := range *op.Security {
				for name, scopes := range req {
					schemes = append(schemes, name+fmt.Sprint(scopes))
				}
			}
		}
		slices.Sort(schemes)
		var wantSchemes []string
		switch a {
		case httpapi.Renter:
			// Any token; a route that also serves operators (reading any rental)
			// says so with the operator scheme beside the bearer one.
			wantSchemes = []string{"bearer[]"}
			if len(schemes) == 2 {
				wantSchemes = append(wantSchemes, "operator["+httpapi.DefaultOperatorScope+"]")
			}
		case httpapi.Operator:
			wantSchemes = []string{"operator[" + httpapi.DefaultOperatorScope + "]"}
		}
		if op.Security == nil || !slices.Equal(schemes, wantSchemes) {
			t.Errorf("%s (%s): the document's security is %v, want %v", key, a, schemes, wantSchemes)
		}
	}
}

// TestEveryAlarmedSweepMetricIsWritten: every metric of the sweep's namespace that
// an alarm watches, on its own or in an expression, is one that a sweep writes
// even when it found nothing, under the Service dimension it writes; and each
// sweep alarm watches the counts it is about, with the statistic it needs (a
// Minimum where only what persists sweep after sweep is news).
func TestEveryAlarmedSweepMetricIsWritten(t *testing.T) {
	tpl := load(t)
	idle := map[string]bool{}
	var kinds []deadlines.KindSummary
	for _, k := range deadlinekinds.MustDeclare(deadlinekinds.Policy{}, deadlinekinds.Receivers{}).Swept() {
		kinds = append(kinds, deadlines.KindSummary{Kind: k.Name})
	}
	for _, m := range sweepmetrics.Document(awslambda.Summary{Kinds: kinds}, "s").Metrics {
		idle[m.Name] = true
	}
	watched := map[string][]string{}
	for _, id := range tpl.Resources("AWS::CloudWatch::Alarm") {
		p := tpl.Resource(id).Get("Properties")
		metrics := []samtemplate.Node{p}
		for _, q := range p.Get("Metrics").Items() {
			metrics = append(metrics, q.Get("MetricStat", "Metric"))
		}
		for _, m := range metrics {
			if m.Get("Namespace").Str() != sweepmetrics.Namespace {
				continue
			}
			name := m.Get("MetricName").Str()
			watched[id] = append(watched[id], name)
			if !idle[name] {
				t.Errorf("%s watches %s, which the sweep does not write", id, name)
			}
			if dims := m.Get("Dimensions").Items(); len(dims) != 1 || dims[0].Get("Name").Str() != "Service" {
				t.Errorf("%s watches %s under %d dimensions, want Service only", id, name, len(dims))
			}
		}
	}
	want := map[string][]string{
		"CancellationsStillOwedAlarm": {"CancellationRowsFound"},
		"OverduePaymentAlarm":         {"PaymentRowsOldestOverdue"},
		"ParkedRecordsAlarm":          {"RedeliveryRowsOldestOverdue"},
		"StuckRentalsAlarm":           {"StuckRowsFound"},
		"OverdueReturnsAlarm":         {"ReturnRowsFound"},
		"StuckLeftAlarm":              {"StuckRowsDeclined", "StuckRowsFailed", "StuckRowsLeft"},
	}
	if !maps.EqualFunc(watched, want, slices.Equal) {
		t.Errorf("the sweep's alarms watch %v, want %v", watched, want)
	}
	for id, stat := range map[string]string{"CancellationsStillOwedAlarm": "Minimum", "StuckRentalsAlarm": "Minimum", "OverdueReturnsAlarm": "Maximum"} {
		if got := tpl.Resource(id).Get("Properties", "Statistic").Str(); got != stat {
			t.Errorf("%s reads the %s, want the %s", id, got, stat)
		}
	}
	if got := tpl.Resource("StuckLeftAlarm").Get("Properties", "Metrics").Items()[0].Get("Expression").Str(); got != "declined + failed + left" {
		t.Errorf("StuckLeftAlarm's expression is %q, want the sum of what the sweep did not repair", got)
	}
}

// TestPaymentAlarmsWatchWhatTheProcessEmits: the alarms on the payment metrics watch
// the namespace and names the process writes in Embedded Metric Format, and fire on
// any one.
func TestPaymentAlarmsWatchWhatTheProcessEmits(t *testing.T) {
	tpl := load(t)
	for id, metric := range map[string]string{
		"RefundsOwedAlarm":           process.MetricRefundsOwed,
		"ProviderEventMismatchAlarm": process.MetricProviderEventMismatches,
	} {
		p := tpl.Resource(id).Get("Properties")
		if !p.Exists() {
			t.Errorf("%s is missing", id)
			continue
		}
		if p.Get("Namespace").Str() != process.MetricsNamespace || p.Get("MetricName").Str() != metric ||
			p.Get("Statistic").Str() != "Sum" || p.Get("Threshold").Str() != "0" || p.Get("ComparisonOperator").Str() != "GreaterThanThreshold" {
			t.Errorf("%s watches %s %s (%s %s %s)", id, p.Get("Namespace").Str(), p.Get("MetricName").Str(),
				p.Get("Statistic").Str(), p.Get("ComparisonOperator").Str(), p.Get("Threshold").Str())
		}
		if dims := p.Get("Dimensions").Items(); len(dims) != 1 || dims[0].Get("Name").Str() != "Service" {
			t.Errorf("%s has the dimensions %v, want Service only", id, dims)
		}
	}
}
