// Package secrets reads a secret from AWS Secrets Manager: GetSecretValue, the one
// call the functions make, once, at cold start. It is made as the SDK's client makes
// it, from the SDK's own parts: the endpoint rules of Secrets Manager, the
// configuration's credentials, Signature Version 4, its retryer, the
// configuration's HTTP client and APIOptions (so that what records a client's calls
// records this one's too), and errors of the SDK's types. It does without the SDK's
// Secrets Manager client, whose service schema links every operation of the service
// into every function that reads a secret (131 kB of each binary); decision 35 says
// why. (The package secretsmanager is still imported, for its input and output types
// and its endpoint rules, so its schemas' package init still runs at start.) Its retryer is cfg.Retryer's when
// set, else the standard one: AWS_RETRY_MODE=adaptive's client-side rate limit has
// nothing to limit in one read at start.
package secrets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The service and the operation, as the SDK names them.
const (
	ServiceID     = "Secrets Manager"
	signingName   = "secretsmanager"
	OperationName = "GetSecretValue"
	target        = "secretsmanager.GetSecretValue"
	contentType   = "application/x-amz-json-1.1"
)

// maxAnswer bounds what is read of an answer: a secret is at most 64 KiB, and
// its answer a little more.
const maxAnswer = 1 << 20

// Source is what reads a secret: a Reader, or the SDK's Secrets Manager client.
type Source interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

var _ Source = (*Reader)(nil)

// Reader reads secrets with an aws.Config's region, credentials, endpoint settings,
// retry settings, HTTP client and APIOptions. It is safe for concurrent use.
type Reader struct {
	cfg     aws.Config
	retryer aws.Retryer
}

// New returns the Reader of cfg. Its retryer is cfg.Retryer's, as a client's is, or
// else the standard one with cfg.RetryMaxAttempts.
func New(cfg aws.Config) *Reader {
	r := &Reader{cfg: cfg}
	if cfg.Retryer != nil {
		r.retryer = cfg.Retryer()
	} else {
		r.retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			if cfg.RetryMaxAttempts > 0 {
				o.MaxAttempts = cfg.RetryMaxAttempts
			}
		})
	}
	return r
}

// GetSecretValue reads the secret in.SecretId (a name or an ARN), at in.VersionId or
// in.VersionStage when set, as secretsmanager.Client.GetSecretValue does; optFns are
// not supported and refused. Its errors are the SDK's: a *smithy.OperationError
// around the service's refusal (a smithy.APIError, such as
// ResourceNotFoundException) or the failure to reach it.
func (r *Reader) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if len(optFns) > 0 {
		return nil, r.opError(errors.New("per-call options are not supported"))
	}
	if in == nil || aws.ToString(in.SecretId) == "" {
		return nil, r.opError(errors.New("SecretId is required"))
	}
	stack := middleware.NewStack(OperationName, smithyhttp.NewStackRequest)
	err := stack.Initialize.Add(&awsmiddleware.RegisterServiceMetadata{
		ServiceID: ServiceID, SigningName: signingName, Region: r.cfg.Region, OperationName: OperationName,
	}, middleware.Before)
	for _, fn := range r.cfg.APIOptions {
		err = errors.Join(err, fn(stack))
	}
	err = errors.Join(err, stack.Initialize.Add(middleware.InitializeMiddlewareFunc("secrets.Call",
		func(ctx context.Context, in middleware.InitializeInput, _ middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, err := r.call(ctx, in.Parameters.(*secretsmanager.GetSecretValueInput))
			return middleware.InitializeOutput{Result: out}, middleware.Metadata{}, err
		}), middleware.After))
	if err != nil {
		return nil, r.opError(err)
	}
	unreachable := middleware.HandlerFunc(func(context.Context, any) (any, middleware.Metadata, error) {
		return nil, middleware.Metadata{}, errors.New("secrets: the call was not made")
	})
	out, _, err := middleware.DecorateHandler(unreachable, stack).Handle(ctx, in)
	if err != nil {
		return nil, r.opError(err)
	}
	return out.(*secretsmanager.GetSecretValueOutput), nil
}

func (r *Reader) opError(err error) error {
	return &smithy.OperationError{ServiceID: ServiceID, OperationName: OperationName, Err: err}
}

// call makes the request, again while the retryer says a failure may pass.
func (r *Reader) call(ctx context.Context, in *secretsmanager.GetSecretValueInput) (*secretsmanager.GetSecretValueOutput, error) {
	body, err := json.Marshal(request{SecretID: aws.ToString(in.SecretId), VersionID: aws.ToString(in.VersionId), VersionStage: aws.ToString(in.VersionStage)})
	if err != nil {
		return nil, err
	}
	endpoint, err := r.endpoint(ctx)
	if err != nil {
		return nil, err
	}
	retryer := r.retryer
	for attempt := 1; ; attempt++ {
		out, err := r.once(ctx, endpoint, body)
		if err == nil || attempt >= retryer.MaxAttempts() || !retryer.IsErrorRetryable(err) {
			return out, err
		}
		delay, derr := retryer.RetryDelay(attempt, err)
		if derr != nil {
			return nil, err
		}
		if werr := sleep(ctx, delay); werr != nil {
			return nil, errors.Join(err, werr)
		}
	}
}

// request is GetSecretValue's input as the service reads it.
type request struct {
	SecretID     string `json:"SecretId"`
	VersionID    string `json:"VersionId,omitempty"`
	VersionStage string `json:"VersionStage,omitempty"`
}

// answer is GetSecretValue's output as the service writes it; SecretBinary is
// base64, which encoding/json decodes into bytes.
type answer struct {
	ARN           string   `json:"ARN"`
	Name          string   `json:"Name"`
	VersionID     string   `json:"VersionId"`
	SecretString  *string  `json:"SecretString"`
	SecretBinary  []byte   `json:"SecretBinary"`
	VersionStages []string `json:"VersionStages"`
}

// refusal is the service's error answer: its type (after any namespace and '#')
// and message.
type refusal struct {
	Type       string `json:"__type"`
	Message    string `json:"message"`
	MessageCap string `json:"Message"`
}

// once makes one signed request to endpoint.
func (r *Reader) once(ctx context.Context, endpoint string, body []byte) (*secretsmanager.GetSecretValueOutput, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Amz-Target", target)
	if r.cfg.Credentials == nil {
		return nil, errors.New("no credentials")
	}
	creds, err := r.cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("retrieve credentials: %w", err)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), signingName, r.cfg.Region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	client := r.cfg.HTTPClient
	if client == nil {
		client = awshttp.NewBuildableClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, &smithyhttp.RequestSendError{Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, &smithyhttp.RequestSendError{Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, responseError(resp, data)
	}
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, &smithy.DeserializationError{Err: err}
	}
	return &secretsmanager.GetSecretValueOutput{
		ARN: nonEmpty(a.ARN), Name: nonEmpty(a.Name), VersionId: nonEmpty(a.VersionID),
		SecretString: a.SecretString, SecretBinary: a.SecretBinary, VersionStages: a.VersionStages,
	}, nil
}

// responseError is the SDK's error of a refused request: an *awshttp.ResponseError
// (its status, which the retryer reads) around a smithy.APIError (its code).
func responseError(resp *http.Response, data []byte) error {
	var f refusal
	_ = json.Unmarshal(data, &f)
	code := f.Type
	for i := len(code) - 1; i >= 0; i-- {
		if code[i] == '#' || code[i] == ':' {
			code = code[i+1:]
			break
		}
	}
	if code == "" {
		code = http.StatusText(resp.StatusCode)
	}
	msg := f.Message
	if msg == "" {
		msg = f.MessageCap
	}
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: &smithy.GenericAPIError{Code: code, Message: msg}},
		RequestID:     resp.Header.Get("X-Amzn-Requestid"),
	}
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// The configuration sources' answers the SDK's clients ask for (awsenv's source
// gives them).
type (
	serviceEndpoints interface {
		GetServiceBaseEndpoint(ctx context.Context, sdkID string) (string, bool, error)
	}
	fipsEndpoints interface {
		GetUseFIPSEndpoint(ctx context.Context) (aws.FIPSEndpointState, bool, error)
	}
	dualStackEndpoints interface {
		GetUseDualStackEndpoint(ctx context.Context) (aws.DualStackEndpointState, bool, error)
	}
)

// endpoint resolves Secrets Manager's endpoint by the service's own rules, as its
// client does: the configuration's base endpoint unless a source gives the
// service's own (AWS_ENDPOINT_URL_SECRETS_MANAGER), FIPS and dual-stack as the
// sources say, and the region.
func (r *Reader) endpoint(ctx context.Context) (string, error) {
	params := secretsmanager.EndpointParameters{Region: aws.String(r.cfg.Region), Endpoint: r.cfg.BaseEndpoint}
	for _, src := range r.cfg.ConfigSources {
		if s, ok := src.(serviceEndpoints); ok {
			v, found, err := s.GetServiceBaseEndpoint(ctx, ServiceID)
			if err != nil {
				return "", err
			}
			if found {
				params.Endpoint = aws.String(v)
			}
		}
		if s, ok := src.(fipsEndpoints); ok {
			if state, found, err := s.GetUseFIPSEndpoint(ctx); err == nil && found {
				params.UseFIPS = aws.Bool(state == aws.FIPSEndpointStateEnabled)
			}
		}
		if s, ok := src.(dualStackEndpoints); ok {
			if state, found, err := s.GetUseDualStackEndpoint(ctx); err == nil && found {
				params.UseDualStack = aws.Bool(state == aws.DualStackEndpointStateEnabled)
			}
		}
	}
	ep, err := secretsmanager.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, params)
	if err != nil {
		return "", fmt.Errorf("resolve the endpoint: %w", err)
	}
	u := ep.URI
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}
