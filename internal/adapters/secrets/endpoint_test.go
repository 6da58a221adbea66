package secrets_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/adapters/secrets"
	"github.com/bikerental/bikerental/internal/wiring/awsenv"
)

// hosts is an HTTP client that answers nothing and keeps where it was asked to go.
type hosts struct {
	mu   sync.Mutex
	urls []string
}

func (h *hosts) Do(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.urls = append(h.urls, req.URL.Scheme+"://"+req.URL.Host+req.URL.Path)
	return nil, errors.New("not sent")
}

// TestItGoesWhereTheSDKClientGoes: for each endpoint setting a function may have
// (none, the region's FIPS or dual-stack endpoint, AWS_ENDPOINT_URL, the service's
// own AWS_ENDPOINT_URL_SECRETS_MANAGER, both, or both ignored), the Reader sends its
// request where the SDK's Secrets Manager client sends it.
func TestItGoesWhereTheSDKClientGoes(t *testing.T) {
	for name, vars := range map[string]map[string]string{
		"the region's":        {},
		"another partition's": {"AWS_REGION": "cn-north-1"},
		"FIPS":                {"AWS_USE_FIPS_ENDPOINT": "true"},
		"dual-stack":          {"AWS_USE_DUALSTACK_ENDPOINT": "true"},
		"every service's":     {"AWS_ENDPOINT_URL": "http://localhost:5000"},
		"the service's own":   {"AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://localhost:5001"},
		"both":                {"AWS_ENDPOINT_URL": "http://localhost:5000", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://localhost:5001"},
		"both ignored":        {"AWS_ENDPOINT_URL": "http://localhost:5000", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://localhost:5001", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_MAX_ATTEMPTS": "1"}
			for k, v := range vars {
				env[k] = v
			}
			for k, v := range env {
				t.Setenv(k, v) // the SDK's client reads AWS_ENDPOINT_URL_SECRETS_MANAGER from the process too
			}
			cfg, err := awsenv.Load(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			sdk, ours := &hosts{}, &hosts{}
			in := &secretsmanager.GetSecretValueInput{SecretId: aws.String("s")}
			cfg.HTTPClient = sdk
			_, _ = secretsmanager.NewFromConfig(cfg).GetSecretValue(context.Background(), in)
			cfg.HTTPClient = ours
			_, _ = secrets.New(cfg).GetSecretValue(context.Background(), in)
			if len(sdk.urls) != 1 || len(ours.urls) != 1 || sdk.urls[0] != ours.urls[0] {
				t.Errorf("the SDK's client went to %q, the Reader to %q", sdk.urls, ours.urls)
			}
		})
	}
}
