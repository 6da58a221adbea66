package lambdas_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/lambdas"
)

// noAWS is an AWS SDK HTTP client that records every request and answers none,
// and counts the clients made with config (each service client's constructor
// calls the configuration's Retryer once).
type noAWS struct {
	mu      sync.Mutex
	sent    []string
	clients int
}

func (n *noAWS) Do(r *http.Request) (*http.Response, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, r.Header.Get("X-Amz-Target")+" "+r.URL.String())
	return nil, errors.New("this test reaches no AWS")
}

func (n *noAWS) requests() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.sent...)
}

func (n *noAWS) made() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.clients
}

func config(client *noAWS) aws.Config {
	return aws.Config{Region: "eu-west-1", HTTPClient: client,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
		Retryer: func() aws.Retryer {
			client.mu.Lock()
			defer client.mu.Unlock()
			client.clients++
			return aws.NopRetryer{}
		}}
}

// goodSettings are settings every function starts with, whose secrets are in
// Secrets Manager: a builder that read them before checking the rest would send a
// request.
var goodSettings = map[string]string{
	wiring.EnvEventsTable:         "bikerental-events",
	wiring.EnvDeadlinesTable:      "bikerental-pending",
	wiring.EnvWebhookSecretID:     "bikerental/webhook",
	"PAYMENT_PROVIDER":            "stripe",
	"STRIPE_SECRET_ID":            "bikerental/stripe",
	wiring.EnvDeadlineMode:        "precise",
	wiring.EnvDeadlineGroup:       "bikerental-deadlines",
	wiring.EnvDeadlineTarget:      "arn:aws:lambda:eu-west-1:123456789012:function:sweep",
	wiring.EnvDeadlineRole:        "arn:aws:iam::123456789012:role/scheduler",
	wiring.EnvDeadlineDLQ:         "arn:aws:sqs:eu-west-1:123456789012:deadline-dlq",
	wiring.EnvRentalCurrency:      "EUR",
	wiring.EnvRentalPrice:         "1500",
	wiring.EnvMetricsService:      "bikerental-prod",
	wiring.EnvOperatorScope:       "bikerental/operator",
	wiring.EnvMaxPendingPerRenter: "2",
}

const (
	command   = 1 << iota
	process   = 1 << iota
	projector = 1 << iota
	sweep     = 1 << iota
)

var bit = map[string]int{lambdas.Command: command, lambdas.Process: process, lambdas.Projector: projector, lambdas.Sweep: sweep}

// secrets are the settings whose value a refusal never shows.
var secrets = map[string]bool{wiring.EnvWebhookSecret: true, "STRIPE_SECRET_KEY": true, "STRIPE_WEBHOOK_SECRET": true}

// refusalForm is the one form of a refused setting (wiring.SettingError): the
// variable, its value quoted (left out for a secret), and what it wants.
func refusalForm(variable string) *regexp.Regexp {
	v := regexp.QuoteMeta(variable)
	return regexp.MustCompile(`^(bad setting ` + v + `=".*"|bad setting ` + v + ` \(not shown\)|missing setting ` + v + `): want \S.*$`)
}

// TestEveryBadSettingIsRefusedBeforeAWS builds every function with one bad setting
// at a time: each builder that reads the setting returns an error naming it, and
// has made no AWS client, so sent no request (nor read a secret); the refusal is a
// wiring.SettingError naming the variable, in the one form.
func TestEveryBadSettingIsRefusedBeforeAWS(t *testing.T) {
	for _, tc := range []struct {
		name      string
		set       map[string]string // over goodSettings; "" unsets
		variable  string            // the error must name it
		functions int               // the functions that read it
	}{
		{"currency of four letters", map[string]string{wiring.EnvRentalCurrency: "EURO"}, wiring.EnvRentalCurrency, command | process | sweep},
		{"currency with a digit", map[string]string{wiring.EnvRentalCurrency: "EU1"}, wiring.EnvRentalCurrency, command | process | sweep},
		{"price of zero", map[string]string{wiring.EnvRentalPrice: "0"}, wiring.EnvRentalPrice, command | process | sweep},
		{"negative price", map[string]string{wiring.EnvRentalPrice: "-5"}, wiring.EnvRentalPrice, command | process | sweep},
		{"price in euros", map[string]string{wiring.EnvRentalPrice: "9.90"}, wiring.EnvRentalPrice, command | process | sweep},
		{"price over the payment's limit", map[string]string{wiring.EnvRentalPrice: "100000000"}, wiring.EnvRentalPrice, command | process | sweep},
		{"unknown recording mode", map[string]string{wiring.EnvRecordingMode: "carrier-pigeon"}, wiring.EnvRecordingMode, command | process | sweep},
		{"no events table", map[string]string{wiring.EnvEventsTable: ""}, wiring.EnvEventsTable, command | process | projector | sweep},
		{"events table with a space", map[string]string{wiring.EnvEventsTable: "bike events"}, wiring.EnvEventsTable, command | process | projector | sweep},
		{"no pending table", map[string]string{wiring.EnvDeadlinesTable: ""}, wiring.EnvDeadlinesTable, projector | sweep},
		{"pending table too short", map[string]string{wiring.EnvDeadlinesTable: "pp"}, wiring.EnvDeadlinesTable, command | projector | sweep},
		{"no shards", map[string]string{wiring.EnvDeadlinesShards: "0"}, wiring.EnvDeadlinesShards, command | projector | sweep},
		{"too many shards", map[string]string{wiring.EnvDeadlinesShards: "257"}, wiring.EnvDeadlinesShards, command | projector | sweep},
		{"shards in words", map[string]string{wiring.EnvDeadlinesShards: "four"}, wiring.EnvDeadlinesShards, command | projector | sweep},
		{"negative marker TTL", map[string]string{wiring.EnvMarkerTTL: "-1h"}, wiring.EnvMarkerTTL, projector | sweep},
		{"payment timeout without a unit", map[string]string{wiring.EnvPaymentTimeout: "15"}, wiring.EnvPaymentTimeout, projector | sweep},
		{"zero payment timeout", map[string]string{wiring.EnvPaymentTimeout: "0s"}, wiring.EnvPaymentTimeout, projector | sweep},
		{"stuck grace in words", map[string]string{wiring.EnvStuckGrace: "soon"}, wiring.EnvStuckGrace, projector | sweep},
		{"rental period without a unit", map[string]string{wiring.EnvRentalPeriod: "2"}, wiring.EnvRentalPeriod, projector | sweep},
		{"zero rental period", map[string]string{wiring.EnvRentalPeriod: "0s"}, wiring.EnvRentalPeriod, projector | sweep},
		{"negative rental period", map[string]string{wiring.EnvRentalPeriod: "-2h"}, wiring.EnvRentalPeriod, projector | sweep},
		{"rental period in words", map[string]string{wiring.EnvRentalPeriod: "two hours"}, wiring.EnvRentalPeriod, projector | sweep},
		{"no sweep concurrency", map[string]string{wiring.EnvSweepConcurrency: "0"}, wiring.EnvSweepConcurrency, sweep},
		{"sweep rate in days", map[string]string{wiring.EnvSweepRate: "rate(1 day)"}, wiring.EnvSweepRate, sweep},
		{"sweep rate of none", map[string]string{wiring.EnvSweepRate: "rate(0 minutes)"}, wiring.EnvSweepRate, sweep},
		{"sweep rate as a cron", map[string]string{wiring.EnvSweepRate: "cron(* * * * ? *)"}, wiring.EnvSweepRate, sweep},
		{"sweep rate with a leading zero", map[string]string{wiring.EnvSweepRate: "rate(01 minute)"}, wiring.EnvSweepRate, sweep},
		{"unknown stuck repair", map[string]string{wiring.EnvStuckRepair: "maybe"}, wiring.EnvStuckRepair, sweep},
		{"metrics service with a control character", map[string]string{wiring.EnvMetricsService: "bike\x01rental"}, wiring.EnvMetricsService, process | sweep},
		{"metrics service too long", map[string]string{wiring.EnvMetricsService: strings.Repeat("b", 256)}, wiring.EnvMetricsService, process | sweep},
		{"no pending request allowed", map[string]string{wiring.EnvMaxPendingPerRenter: "0"}, wiring.EnvMaxPendingPerRenter, command},
		{"operator scope with a space", map[string]string{wiring.EnvOperatorScope: "bikerental operator"}, wiring.EnvOperatorScope, command},
		{"no webhook secret", map[string]string{wiring.EnvWebhookSecretID: ""}, wiring.EnvWebhookSecret, command},
		{"short webhook secret", map[string]string{wiring.EnvWebhookSecretID: "", wiring.EnvWebhookSecret: "short"}, wiring.EnvWebhookSecret, command},
		{"webhook secret id with a space", map[string]string{wiring.EnvWebhookSecretID: "bikerental webhook"}, wiring.EnvWebhookSecretID, command},
		{"unknown provider", map[string]string{"PAYMENT_PROVIDER": "paypal"}, "PAYMENT_PROVIDER", command | process | sweep},
		{"Stripe secret id with a space", map[string]string{"STRIPE_SECRET_ID": "bikerental stripe"}, "STRIPE_SECRET_ID", command | process | sweep},
		{"no Stripe key", map[string]string{"STRIPE_SECRET_ID": "", "STRIPE_WEBHOOK_SECRET": "whsec_x"}, "STRIPE_SECRET_KEY", command | process | sweep},
		{"Stripe key with a space", map[string]string{"STRIPE_SECRET_ID": "", "STRIPE_SECRET_KEY": "sk_test_not shown", "STRIPE_WEBHOOK_SECRET": "whsec_x"}, "STRIPE_SECRET_KEY", command | process | sweep},
		{"Stripe webhook secret with a space", map[string]string{"STRIPE_SECRET_ID": "", "STRIPE_SECRET_KEY": "sk_test_x", "STRIPE_WEBHOOK_SECRET": "whsec_not shown"}, "STRIPE_WEBHOOK_SECRET", command | process | sweep},
		{"webhook secret short, from the environment", map[string]string{wiring.EnvWebhookSecretID: "", wiring.EnvWebhookSecret: "not-shown-short"}, wiring.EnvWebhookSecret, command},
		{"Stripe API URL not a URL", map[string]string{"STRIPE_SECRET_ID": "", "STRIPE_SECRET_KEY": "sk_test_x", "STRIPE_WEBHOOK_SECRET": "whsec_x", "STRIPE_API_URL": "localhost:12111"}, "STRIPE_API_URL", command | process | sweep},
		{"unknown deadline mode", map[string]string{wiring.EnvDeadlineMode: "sometimes"}, wiring.EnvDeadlineMode, projector},
		{"precise without a role", map[string]string{wiring.EnvDeadlineRole: ""}, wiring.EnvDeadlineRole, projector},
		{"target that is no ARN", map[string]string{wiring.EnvDeadlineTarget: "sweep"}, wiring.EnvDeadlineTarget, projector},
		{"bad queue ARN in sweep mode", map[string]string{wiring.EnvDeadlineMode: "sweep", wiring.EnvDeadlineDLQ: "arn:aws:sqs"}, wiring.EnvDeadlineDLQ, projector},
		{"schedule group with a slash", map[string]string{wiring.EnvDeadlineGroup: "bikerental/deadlines"}, wiring.EnvDeadlineGroup, projector},
	} {
		env := map[string]string{}
		for k, v := range goodSettings {
			env[k] = v
		}
		for k, v := range tc.set {
			env[k] = v
		}
		getenv := func(k string) string { return env[k] }
		for _, f := range lambdas.All() {
			if tc.functions&bit[f.Name] == 0 {
				continue
			}
			t.Run(tc.name+"/"+f.Name, func(t *testing.T) {
				client := &noAWS{}
				_, err := f.Build(context.Background(), config(client), getenv, slog.New(slog.DiscardHandler), io.Discard)
				if err == nil || !strings.Contains(err.Error(), tc.variable) {
					t.Errorf("Build = %v, want an error naming %s", err, tc.variable)
				}
				if !errors.Is(err, wiring.ErrBadSetting) && !errors.Is(err, wiring.ErrMissingSetting) {
					t.Errorf("Build = %v, want ErrBadSetting or ErrMissingSetting", err)
				}
				if se, ok := wiring.Refused(err); !ok || se.Name != tc.variable || !refusalForm(tc.variable).MatchString(se.Error()) {
					t.Errorf("Build = %v, want the refusal of %s in the one form", err, tc.variable)
				} else if v := env[tc.variable]; secrets[tc.variable] && v != "" && (!se.Secret || strings.Contains(se.Error(), v)) {
					t.Errorf("the refusal of the secret %s shows it: %v", tc.variable, se)
				}
				if sent := client.requests(); len(sent) > 0 {
					t.Errorf("Build sent %d requests to AWS before refusing the setting: %v", len(sent), sent)
				}
				if n := client.made(); n > 0 {
					t.Errorf("Build made %d AWS clients before refusing the setting", n)
				}
				if checked := f.Check(getenv); checked == nil || !strings.Contains(checked.Error(), tc.variable) {
					t.Errorf("Check = %v, want an error naming %s", checked, tc.variable)
				}
			})
		}
	}
}

// TestGoodSettingsReachAWS is the control: with goodSettings, every function makes
// its clients, and those that read a secret ask Secrets Manager for it, through
// the recording client.
func TestGoodSettingsReachAWS(t *testing.T) {
	getenv := func(k string) string { return goodSettings[k] }
	if err := lambdas.Check(getenv); err != nil {
		t.Fatalf("Check = %v", err)
	}
	for _, f := range lambdas.All() {
		client := &noAWS{}
		_, err := f.Build(context.Background(), config(client), getenv, slog.New(slog.DiscardHandler), io.Discard)
		sent := client.requests()
		if client.made() == 0 {
			t.Errorf("%s: Build made no AWS client", f.Name)
		}
		switch f.Name {
		case lambdas.Projector: // reads no secret, and looks at its table on its first batch
			if err != nil || len(sent) != 0 {
				t.Errorf("%s: Build = %v after %d requests", f.Name, err, len(sent))
			}
		default:
			if err == nil || len(sent) == 0 || !strings.Contains(sent[0], "secretsmanager.GetSecretValue") {
				t.Errorf("%s: Build = %v after requests %v, want a failed read of a secret", f.Name, err, sent)
			}
		}
	}
}
