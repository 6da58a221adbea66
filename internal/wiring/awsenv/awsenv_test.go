package awsenv_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/wiring/awsenv"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// isolate empties the AWS part of the process's environment for the test and
// points the shared config files somewhere empty, so that config.LoadDefaultConfig
// sees only what the test sets. The clients read some variables from the process's
// environment themselves, so the tests set them with t.Setenv.
func isolate(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func setenv(t *testing.T, vars map[string]string) {
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

var lambdaEnv = map[string]string{
	"AWS_REGION":            "eu-central-1",
	"AWS_ACCESS_KEY_ID":     "AKIDEXAMPLE",
	"AWS_SECRET_ACCESS_KEY": "secret",
	"AWS_SESSION_TOKEN":     "token",
}

func with(extra map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range lambdaEnv {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// TestAgreesWithLoadDefaultConfig compares what the clients end up with from Load
// and from config.LoadDefaultConfig, for every setting Load reads.
func TestAgreesWithLoadDefaultConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"what Lambda sets", lambdaEnv},
		{"default region only", map[string]string{"AWS_DEFAULT_REGION": "us-west-2", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}},
		{"one endpoint for all", with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566"})},
		{"an endpoint for DynamoDB", with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000"})},
		{"an endpoint for Secrets Manager only", with(map[string]string{"AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://127.0.0.1:9000"})},
		{"endpoints ignored", with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:8000", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"})},
		{"FIPS and dual-stack", with(map[string]string{"AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "true"})},
		{"retries", with(map[string]string{"AWS_MAX_ATTEMPTS": "7", "AWS_RETRY_MODE": "adaptive"})},
		{"account id, app id and defaults mode", with(map[string]string{"AWS_ACCOUNT_ID": "123456789012", "AWS_ACCOUNT_ID_ENDPOINT_MODE": "required", "AWS_SDK_UA_APP_ID": "bikerental", "AWS_DEFAULTS_MODE": "in-region"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			setenv(t, tc.env)
			ctx := context.Background()
			got, err := awsenv.Load(os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			want, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.Region != want.Region || aws.ToString(got.BaseEndpoint) != aws.ToString(want.BaseEndpoint) ||
				got.RetryMaxAttempts != want.RetryMaxAttempts || got.RetryMode != want.RetryMode || got.AppID != want.AppID ||
				got.AccountIDEndpointMode != want.AccountIDEndpointMode || resolved(got.DefaultsMode) != resolved(want.DefaultsMode) ||
				got.RequestChecksumCalculation != want.RequestChecksumCalculation || got.ResponseChecksumValidation != want.ResponseChecksumValidation ||
				got.RequestMinCompressSizeBytes != want.RequestMinCompressSizeBytes {
				t.Errorf("Load:\n%+v\nLoadDefaultConfig:\n%+v", summary(got), summary(want))
			}
			gotCreds, err := got.Credentials.Retrieve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantCreds, err := want.Credentials.Retrieve(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if gotCreds.AccessKeyID != wantCreds.AccessKeyID || gotCreds.SecretAccessKey != wantCreds.SecretAccessKey ||
				gotCreds.SessionToken != wantCreds.SessionToken || gotCreds.AccountID != wantCreds.AccountID ||
				gotCreds.Source != wantCreds.Source || gotCreds.CanExpire != wantCreds.CanExpire {
				t.Errorf("credentials: Load %+v, LoadDefaultConfig %+v", gotCreds, wantCreds)
			}

			for _, c := range []struct {
				service   string
				got, want clientOptions
			}{
				{"dynamodb", dynamoOptions(got), dynamoOptions(want)},
				{"secretsmanager", secretsOptions(got), secretsOptions(want)},
				{"scheduler", schedulerOptions(got), schedulerOptions(want)},
			} {
				if c.got != c.want {
					t.Errorf("%s client: Load %+v, LoadDefaultConfig %+v", c.service, c.got, c.want)
				}
			}
		})
	}
}

func summary(c aws.Config) map[string]any {
	return map[string]any{"Region": c.Region, "BaseEndpoint": aws.ToString(c.BaseEndpoint), "RetryMaxAttempts": c.RetryMaxAttempts,
		"RetryMode": c.RetryMode, "AppID": c.AppID, "AccountIDEndpointMode": c.AccountIDEndpointMode, "DefaultsMode": c.DefaultsMode,
		"RequestChecksumCalculation": c.RequestChecksumCalculation, "ResponseChecksumValidation": c.ResponseChecksumValidation,
		"RequestMinCompressSizeBytes": c.RequestMinCompressSizeBytes}
}

// clientOptions are the options a client resolved from the configuration.
type clientOptions struct {
	BaseEndpoint     string
	FIPS             aws.FIPSEndpointState
	DualStack        aws.DualStackEndpointState
	MaxAttempts      int
	RetryMode        aws.RetryMode
	ResolvedDefaults aws.DefaultsMode
}

// resolved is the defaults mode a client resolves mode to: mode itself, or for an
// empty one the SDK's legacy defaults, as config.LoadDefaultConfig sets them when
// no mode is configured. (A client goes on to resolve auto by its region.)
func resolved(mode aws.DefaultsMode) aws.DefaultsMode {
	var m aws.DefaultsMode
	m.SetFromString(string(mode))
	return m
}

func dynamoOptions(cfg aws.Config) clientOptions {
	o := dynamodb.NewFromConfig(cfg).Options()
	return clientOptions{aws.ToString(o.BaseEndpoint), o.EndpointOptions.UseFIPSEndpoint, o.EndpointOptions.UseDualStackEndpoint,
		o.Retryer.MaxAttempts(), o.RetryMode, resolved(o.DefaultsMode)}
}

func secretsOptions(cfg aws.Config) clientOptions {
	o := secretsmanager.NewFromConfig(cfg).Options()
	return clientOptions{aws.ToString(o.BaseEndpoint), o.EndpointOptions.UseFIPSEndpoint, o.EndpointOptions.UseDualStackEndpoint,
		o.Retryer.MaxAttempts(), o.RetryMode, resolved(o.DefaultsMode)}
}

func schedulerOptions(cfg aws.Config) clientOptions {
	o := scheduler.NewFromConfig(cfg).Options()
	return clientOptions{aws.ToString(o.BaseEndpoint), o.EndpointOptions.UseFIPSEndpoint, o.EndpointOptions.UseDualStackEndpoint,
		o.Retryer.MaxAttempts(), o.RetryMode, resolved(o.DefaultsMode)}
}

func TestMissingOrMalformedSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		is   error  // the error matches it, if set
		says string // the error's text holds it
	}{
		{"no region", map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}, awsenv.ErrNoRegion, "AWS_REGION"},
		{"no credentials", map[string]string{"AWS_REGION": "us-east-1"}, awsenv.ErrNoCredentials, "AWS_ACCESS_KEY_ID"},
		{"half the credentials", map[string]string{"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "a"}, awsenv.ErrNoCredentials, "AWS_SECRET_ACCESS_KEY"},
		{"a profile instead of credentials", map[string]string{"AWS_REGION": "us-east-1", "AWS_PROFILE": "dev"}, awsenv.ErrNoCredentials, "AWS_PROFILE is set"},
		{"container credentials", map[string]string{"AWS_REGION": "us-east-1", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1:1"}, awsenv.ErrNoCredentials, "AWS_CONTAINER_CREDENTIALS_FULL_URI is set"},
		{"attempts", with(map[string]string{"AWS_MAX_ATTEMPTS": "many"}), nil, "AWS_MAX_ATTEMPTS"},
		{"negative attempts", with(map[string]string{"AWS_MAX_ATTEMPTS": "-1"}), nil, "AWS_MAX_ATTEMPTS"},
		{"retry mode", with(map[string]string{"AWS_RETRY_MODE": "eager"}), nil, "AWS_RETRY_MODE"},
		{"FIPS", with(map[string]string{"AWS_USE_FIPS_ENDPOINT": "yes"}), nil, "AWS_USE_FIPS_ENDPOINT"},
		{"dual-stack", with(map[string]string{"AWS_USE_DUALSTACK_ENDPOINT": "1"}), nil, "AWS_USE_DUALSTACK_ENDPOINT"},
		{"ignore endpoints", with(map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "please"}), nil, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"},
		{"account id endpoint mode", with(map[string]string{"AWS_ACCOUNT_ID_ENDPOINT_MODE": "sometimes"}), nil, "AWS_ACCOUNT_ID_ENDPOINT_MODE"},
		{"defaults mode", with(map[string]string{"AWS_DEFAULTS_MODE": "fast"}), nil, "AWS_DEFAULTS_MODE"},
		{"missing CA bundle", with(map[string]string{"AWS_CA_BUNDLE": "/nonexistent/ca.pem"}), nil, "AWS_CA_BUNDLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := awsenv.Load(func(k string) string { return tc.env[k] })
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want it to say %q", err, tc.says)
			}
		})
	}
}

func TestDefaultsModeAutoUsesTheFunctionsRegion(t *testing.T) {
	cfg, err := awsenv.Load(func(k string) string {
		return with(map[string]string{"AWS_DEFAULTS_MODE": "auto", "AWS_EXECUTION_ENV": "AWS_Lambda_provided.al2023"})[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DefaultsMode != aws.DefaultsModeAuto || cfg.RuntimeEnvironment.Region != "eu-central-1" ||
		cfg.RuntimeEnvironment.EnvironmentIdentifier != "AWS_Lambda_provided.al2023" {
		t.Errorf("defaults mode %q, runtime environment %+v", cfg.DefaultsMode, cfg.RuntimeEnvironment)
	}
	if mode := dynamodb.NewFromConfig(cfg).Options().DefaultsMode; mode != aws.DefaultsModeAuto {
		t.Errorf("the client's defaults mode is %q", mode)
	}
}

func TestCABundleIsTrusted(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	get := func(cfg aws.Config) error {
		client := cfg.HTTPClient
		if client == nil {
			client = http.DefaultClient
		}
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}

	cfg, err := awsenv.Load(func(k string) string { return lambdaEnv[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := get(cfg); err == nil {
		t.Fatal("the test server's certificate is trusted without a CA bundle; the test proves nothing")
	}
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = awsenv.Load(func(k string) string { return with(map[string]string{"AWS_CA_BUNDLE": bundle})[k] })
	if err != nil {
		t.Fatal(err)
	}
	if err := get(cfg); err != nil {
		t.Errorf("with the server's certificate in AWS_CA_BUNDLE: %v", err)
	}

	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := awsenv.Load(func(k string) string { return with(map[string]string{"AWS_CA_BUNDLE": notPEM})[k] }); err == nil || !strings.Contains(err.Error(), "no PEM certificates") {
		t.Errorf("a bundle without certificates: err = %v", err)
	}
}

// TestClientsReachTheEmulator proves a configuration from Load signs and sends real
// requests where AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_DYNAMODB point.
func TestClientsReachTheEmulator(t *testing.T) {
	endpoint := emulatortest.Server(t).Endpoint
	const dead = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"AWS_ENDPOINT_URL", with(map[string]string{"AWS_ENDPOINT_URL": endpoint})},
		{"AWS_ENDPOINT_URL_DYNAMODB over AWS_ENDPOINT_URL", with(map[string]string{"AWS_ENDPOINT_URL": dead, "AWS_ENDPOINT_URL_DYNAMODB": endpoint})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			setenv(t, tc.env)
			cfg, err := awsenv.Load(os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dynamodb.NewFromConfig(cfg).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
				t.Errorf("ListTables: %v", err)
			}
		})
	}

	t.Run("AWS_ENDPOINT_URL_DYNAMODB leaves other services alone", func(t *testing.T) {
		isolate(t)
		setenv(t, with(map[string]string{"AWS_ENDPOINT_URL": dead, "AWS_ENDPOINT_URL_DYNAMODB": endpoint}))
		cfg, err := awsenv.Load(os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RetryMaxAttempts = 1
		_, err = secretsmanager.NewFromConfig(cfg).ListSecrets(context.Background(), &secretsmanager.ListSecretsInput{})
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("Secrets Manager should have gone to AWS_ENDPOINT_URL (%s): err = %v", dead, err)
		}
	})
}
