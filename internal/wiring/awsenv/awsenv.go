// Package awsenv builds the AWS SDK's configuration from environment variables alone,
// as a Lambda function finds it: region, the execution role's credentials, endpoints
// and retry settings. It stands in for config.LoadDefaultConfig in the Lambda
// binaries, whose shared-config files, SSO, STS and IMDS support the binaries never
// use but would link and initialise at every cold start. Tools and the local runner,
// which may use profiles, keep config.LoadDefaultConfig.
package awsenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"
)

// Environment variables Load reads, besides the per-service endpoint variables
// AWS_ENDPOINT_URL_<SERVICE> (AWS_ENDPOINT_URL_DYNAMODB, for one).
const (
	envRegion             = "AWS_REGION"
	envDefaultRegion      = "AWS_DEFAULT_REGION"
	envAccessKeyID        = "AWS_ACCESS_KEY_ID"
	envSecretAccessKey    = "AWS_SECRET_ACCESS_KEY"
	envSessionToken       = "AWS_SESSION_TOKEN"
	envAccountID          = "AWS_ACCOUNT_ID"
	envEndpointURL        = "AWS_ENDPOINT_URL"
	envIgnoreEndpointURLs = "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"
	envUseFIPSEndpoint    = "AWS_USE_FIPS_ENDPOINT"
	envUseDualStack       = "AWS_USE_DUALSTACK_ENDPOINT"
	envMaxAttempts        = "AWS_MAX_ATTEMPTS"
	envRetryMode          = "AWS_RETRY_MODE"
	envAccountIDEndpoint  = "AWS_ACCOUNT_ID_ENDPOINT_MODE"
	envDefaultsMode       = "AWS_DEFAULTS_MODE"
	envAppID              = "AWS_SDK_UA_APP_ID"
	envCABundle           = "AWS_CA_BUNDLE"
	envExecutionEnv       = "AWS_EXECUTION_ENV"
)

// otherCredentials are the variables of credential sources Load does not read; one
// of them set without keys makes ErrNoCredentials say so.
var otherCredentials = []string{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE"}

// credentialsSource names where the credentials came from, as config's environment
// credentials name it.
const credentialsSource = "EnvConfigCredentials"

// ErrNoRegion reports an environment without AWS_REGION or AWS_DEFAULT_REGION.
var ErrNoRegion = errors.New("awsenv: no region: set AWS_REGION (Lambda sets it)")

// ErrNoCredentials reports an environment without AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY. Lambda sets them from the function's execution role.
var ErrNoCredentials = errors.New("awsenv: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (Lambda sets them from the execution role; profiles, SSO, web identity, container and instance credentials are not read here)")

// Load returns the SDK configuration getenv (os.Getenv, say) describes, the way
// config.LoadDefaultConfig would read the same variables:
//
//   - region from AWS_REGION, else AWS_DEFAULT_REGION;
//   - static credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//     AWS_SESSION_TOKEN and AWS_ACCOUNT_ID, cached as the SDK caches them;
//   - AWS_ENDPOINT_URL for every client, AWS_ENDPOINT_URL_<SERVICE> for one
//     (DynamoDB's is AWS_ENDPOINT_URL_DYNAMODB), both ignored when
//     AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true; AWS_USE_FIPS_ENDPOINT and
//     AWS_USE_DUALSTACK_ENDPOINT;
//   - AWS_MAX_ATTEMPTS and AWS_RETRY_MODE for the SDK's retryer, which each client
//     builds as usual; AWS_ACCOUNT_ID_ENDPOINT_MODE, AWS_DEFAULTS_MODE,
//     AWS_SDK_UA_APP_ID and AWS_CA_BUNDLE.
//
// It reads no file other than AWS_CA_BUNDLE and makes no network call. A missing
// region or missing credentials (ErrNoRegion, ErrNoCredentials) and a malformed value
// are errors that name the variable.
func Load(getenv func(string) string) (aws.Config, error) {
	// DefaultsMode is left empty without AWS_DEFAULTS_MODE: every client reads an
	// empty mode as the SDK's legacy defaults, the mode config.LoadDefaultConfig
	// sets when none is configured (aws.DefaultsMode.SetFromString).
	cfg := aws.Config{
		Logger:                      logging.NewStandardLogger(os.Stderr),
		RequestMinCompressSizeBytes: 10240,
		AccountIDEndpointMode:       aws.AccountIDEndpointModePreferred,
		RequestChecksumCalculation:  aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation:  aws.ResponseChecksumValidationWhenSupported,
		AppID:                       getenv(envAppID),
	}
	if cfg.Region = getenv(envRegion); cfg.Region == "" {
		if cfg.Region = getenv(envDefaultRegion); cfg.Region == "" {
			return aws.Config{}, ErrNoRegion
		}
	}
	var err error
	if cfg.Credentials, err = envCredentials(getenv); err != nil {
		return aws.Config{}, err
	}
	src, err := endpointSource(getenv)
	if err != nil {
		return aws.Config{}, err
	}
	if endpoint := getenv(envEndpointURL); endpoint != "" && !src.ignoreEndpoints {
		cfg.BaseEndpoint = aws.String(endpoint)
	}
	cfg.ConfigSources = []any{src}
	if err := setModes(&cfg, getenv); err != nil {
		return aws.Config{}, err
	}
	if path := getenv(envCABundle); path != "" {
		if cfg.HTTPClient, err = caBundleClient(path); err != nil {
			return aws.Config{}, err
		}
	}
	return cfg, nil
}

// envCredentials returns the static credentials getenv holds, cached as the SDK
// caches them, or ErrNoCredentials, saying which other source is set if one is.
func envCredentials(getenv func(string) string) (aws.CredentialsProvider, error) {
	creds := aws.Credentials{
		AccessKeyID: getenv(envAccessKeyID), SecretAccessKey: getenv(envSecretAccessKey),
		SessionToken: getenv(envSessionToken), AccountID: getenv(envAccountID), Source: credentialsSource,
	}
	if !creds.HasKeys() {
		for _, other := range otherCredentials {
			if getenv(other) != "" {
				return nil, fmt.Errorf("%w; %s is set", ErrNoCredentials, other)
			}
		}
		return nil, ErrNoCredentials
	}
	return aws.NewCredentialsCache(credentials.StaticCredentialsProvider{
		Value: creds, Source: []aws.CredentialSource{aws.CredentialSourceEnvVars},
	}), nil
}

// endpointSource reads the endpoint settings the clients ask their configuration
// sources about: whether configured endpoints are ignored, FIPS and dual-stack.
func endpointSource(getenv func(string) string) (source, error) {
	src := source{getenv: getenv}
	var err error
	if src.ignoreEndpoints, err = boolSetting(getenv, envIgnoreEndpointURLs); err != nil {
		return source{}, err
	}
	if src.fips, err = boolSetting(getenv, envUseFIPSEndpoint); err != nil {
		return source{}, err
	}
	src.fipsSet = getenv(envUseFIPSEndpoint) != ""
	if src.dualStack, err = boolSetting(getenv, envUseDualStack); err != nil {
		return source{}, err
	}
	src.dualStackSet = getenv(envUseDualStack) != ""
	return src, nil
}

// setModes sets in cfg the retryer's attempts and mode, the account-id endpoint
// mode and the defaults mode getenv holds, if it holds them.
func setModes(cfg *aws.Config, getenv func(string) string) error {
	if v := getenv(envMaxAttempts); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("awsenv: %s=%q: want a whole number of attempts", envMaxAttempts, v)
		}
		cfg.RetryMaxAttempts = n
	}
	if v := getenv(envRetryMode); v != "" {
		var err error
		if cfg.RetryMode, err = aws.ParseRetryMode(v); err != nil {
			return fmt.Errorf("awsenv: %s: %w", envRetryMode, err)
		}
	}
	if v := getenv(envAccountIDEndpoint); v != "" {
		switch m := aws.AccountIDEndpointMode(v); m {
		case aws.AccountIDEndpointModePreferred, aws.AccountIDEndpointModeRequired, aws.AccountIDEndpointModeDisabled:
			cfg.AccountIDEndpointMode = m
		default:
			return fmt.Errorf("awsenv: %s=%q: want preferred, required or disabled", envAccountIDEndpoint, v)
		}
	}
	if v := getenv(envDefaultsMode); v != "" {
		if !cfg.DefaultsMode.SetFromString(v) {
			return fmt.Errorf("awsenv: %s=%q: want auto, cross-region, in-region, legacy, mobile or standard", envDefaultsMode, v)
		}
		// config.LoadDefaultConfig would also ask the instance metadata service for
		// its region; in Lambda there is none, and the region is the function's.
		cfg.RuntimeEnvironment = aws.RuntimeEnvironment{
			EnvironmentIdentifier: aws.ExecutionEnvironmentID(getenv(envExecutionEnv)),
			Region:                cfg.Region,
		}
	}
	return nil
}

func boolSetting(getenv func(string) string, name string) (bool, error) {
	switch v := getenv(name); {
	case v == "":
		return false, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	default:
		return false, fmt.Errorf("awsenv: %s=%q: want true or false", name, v)
	}
}

// caBundleClient returns the SDK's HTTP client trusting the certificates in the PEM
// file at path, as config.LoadDefaultConfig does for AWS_CA_BUNDLE.
func caBundleClient(path string) (aws.HTTPClient, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("awsenv: %s: %w", envCABundle, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("awsenv: %s=%s: no PEM certificates in it", envCABundle, path)
	}
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{}
		}
		tr.TLSClientConfig.RootCAs = pool
	}), nil
}

// source answers the clients' questions about configuration that config's
// environment source answers: per-service endpoints, FIPS and dual-stack endpoints.
// The clients find it in aws.Config.ConfigSources.
type source struct {
	getenv          func(string) string
	ignoreEndpoints bool
	fips, fipsSet   bool
	dualStack       bool
	dualStackSet    bool
}

// GetServiceBaseEndpoint returns AWS_ENDPOINT_URL_<SERVICE>, the service's SDK id in
// upper case with spaces as underscores.
func (s source) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	if s.ignoreEndpoints {
		return "", false, nil
	}
	name := envEndpointURL + "_" + strings.ReplaceAll(strings.ToUpper(sdkID), " ", "_")
	v := s.getenv(name)
	return v, v != "", nil
}

// GetIgnoreConfiguredEndpoints reports AWS_IGNORE_CONFIGURED_ENDPOINT_URLS.
func (s source) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return s.ignoreEndpoints, s.ignoreEndpoints, nil
}

// GetUseFIPSEndpoint reports AWS_USE_FIPS_ENDPOINT.
func (s source) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	if !s.fipsSet {
		return aws.FIPSEndpointStateUnset, false, nil
	}
	if s.fips {
		return aws.FIPSEndpointStateEnabled, true, nil
	}
	return aws.FIPSEndpointStateDisabled, true, nil
}

// GetUseDualStackEndpoint reports AWS_USE_DUALSTACK_ENDPOINT.
func (s source) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	if !s.dualStackSet {
		return aws.DualStackEndpointStateUnset, false, nil
	}
	if s.dualStack {
		return aws.DualStackEndpointStateEnabled, true, nil
	}
	return aws.DualStackEndpointStateDisabled, true, nil
}
