package secrets_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/bikerental/bikerental/internal/adapters/secrets"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestReadsWhatTheSDKClientReads creates secrets in moto with the SDK's own client and
// reads them back with the Reader, by name and by ARN, a string and bytes; an
// unknown secret is the service's ResourceNotFoundException, as the client says it.
func TestReadsWhatTheSDKClientReads(t *testing.T) {
	ctx, cfg := context.Background(), emulatortest.Config(t)
	client := secretsmanager.NewFromConfig(cfg)
	name := emulatortest.TableName(t, "secret")
	created, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(`{"secretKey": "sk_test_x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	binary, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name + "-bytes"), SecretBinary: []byte{0, 1, 2, 255}})
	if err != nil {
		t.Fatal(err)
	}
	r := secrets.New(cfg)
	for _, id := range []string{name, aws.ToString(created.ARN)} {
		got, err := r.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		want, werr := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil || werr != nil {
			t.Fatalf("%s: %v (the SDK's client: %v)", id, err, werr)
		}
		if aws.ToString(got.SecretString) != aws.ToString(want.SecretString) || aws.ToString(got.ARN) != aws.ToString(want.ARN) ||
			aws.ToString(got.Name) != name || aws.ToString(got.VersionId) != aws.ToString(want.VersionId) {
			t.Errorf("%s: read %+v, the SDK's client %+v", id, got, want)
		}
	}
	got, err := r.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: binary.ARN})
	if err != nil || string(got.SecretBinary) != "\x00\x01\x02\xff" || got.SecretString != nil {
		t.Errorf("the binary secret: %+v, %v", got, err)
	}
	_, err = r.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(name + "-missing")})
	var apiErr smithy.APIError
	var opErr *smithy.OperationError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ResourceNotFoundException" || !errors.As(err, &opErr) || opErr.Service() != "Secrets Manager" {
		t.Errorf("an unknown secret: %v; want the service's ResourceNotFoundException", err)
	}
}

// service is a stand-in for Secrets Manager that answers with answers in turn and
// keeps the requests.
type service struct {
	mu       sync.Mutex
	answers  []func(http.ResponseWriter)
	requests []*http.Request
	bodies   []string
}

func (s *service) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests, s.bodies = append(s.requests, req), append(s.bodies, string(b))
	answer := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	answer(w)
}

func status(code int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func standIn(t *testing.T, s *service) aws.Config {
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return aws.Config{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "token"),
	}
}

// TestTheRequestIsTheServicesAndSigned: one POST of GetSecretValue's JSON to the
// endpoint, signed for secretsmanager in the configuration's region, with the
// session token.
func TestTheRequestIsTheServicesAndSigned(t *testing.T) {
	s := &service{answers: []func(http.ResponseWriter){status(200, `{"ARN":"arn:x","Name":"n","SecretString":"v","VersionId":"1"}`)}}
	out, err := secrets.New(standIn(t, s)).GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("bikerental/stripe"), VersionStage: aws.String("AWSCURRENT")})
	if err != nil || aws.ToString(out.SecretString) != "v" || aws.ToString(out.ARN) != "arn:x" {
		t.Fatalf("%+v, %v", out, err)
	}
	req := s.requests[0]
	var body map[string]string
	if err := json.Unmarshal([]byte(s.bodies[0]), &body); err != nil || body["SecretId"] != "bikerental/stripe" || body["VersionStage"] != "AWSCURRENT" || len(body) != 2 {
		t.Errorf("body %s", s.bodies[0])
	}
	auth := req.Header.Get("Authorization")
	for got, want := range map[string]bool{
		req.Method + " " + req.URL.Path:        req.Method == http.MethodPost && req.URL.Path == "/",
		req.Header.Get("X-Amz-Target"):         req.Header.Get("X-Amz-Target") == "secretsmanager.GetSecretValue",
		req.Header.Get("Content-Type"):         req.Header.Get("Content-Type") == "application/x-amz-json-1.1",
		auth:                                   strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") && strings.Contains(auth, "/eu-west-1/secretsmanager/aws4_request") && strings.Contains(auth, "x-amz-target"),
		req.Header.Get("X-Amz-Security-Token"): req.Header.Get("X-Amz-Security-Token") == "token",
	} {
		if !want {
			t.Errorf("the request carries %q", got)
		}
	}
}

// TestAFailureThatMayPassIsTriedAgain: a 500 and a throttling refusal are tried again,
// up to the configuration's attempts; a refusal no retry changes is not.
func TestAFailureThatMayPassIsTriedAgain(t *testing.T) {
	ok := status(200, `{"SecretString":"v"}`)
	for _, tc := range []struct {
		name     string
		answers  []func(http.ResponseWriter)
		attempts int
		requests int
		code     string
	}{
		{"500 then throttled then read", []func(http.ResponseWriter){status(500, `{}`), status(400, `{"__type":"ThrottlingException","message":"slow down"}`), ok}, 0, 3, ""},
		{"unknown secret", []func(http.ResponseWriter){status(400, `{"__type":"ResourceNotFoundException","Message":"Secrets Manager can't find the specified secret."}`), ok}, 0, 1, "ResourceNotFoundException"},
		{"denied", []func(http.ResponseWriter){status(400, `{"__type":"com.amazonaws.secretsmanager#AccessDeniedException","message":"no"}`), ok}, 0, 1, "AccessDeniedException"},
		{"out of attempts", []func(http.ResponseWriter){status(503, `{}`)}, 2, 2, "Service Unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &service{answers: tc.answers}
			cfg := standIn(t, s)
			cfg.RetryMaxAttempts = tc.attempts
			out, err := secrets.New(cfg).GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("s")})
			if len(s.requests) != tc.requests {
				t.Errorf("%d requests, want %d", len(s.requests), tc.requests)
			}
			var apiErr smithy.APIError
			switch {
			case tc.code == "" && (err != nil || aws.ToString(out.SecretString) != "v"):
				t.Errorf("%+v, %v; want the secret", out, err)
			case tc.code != "" && (!errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.code):
				t.Errorf("err = %v, want the code %s", err, tc.code)
			}
		})
	}
}

// TestACallIsSeenByTheConfigurationsMiddleware: what records a client's calls by its
// APIOptions (the permission and capacity tests do) sees this one's, with the
// service's and the operation's names, its input and its output.
func TestACallIsSeenByTheConfigurationsMiddleware(t *testing.T) {
	s := &service{answers: []func(http.ResponseWriter){status(200, `{"ARN":"arn:aws:secretsmanager:eu-west-1:1:secret:s-AbCdEf","SecretString":"v"}`)}}
	cfg := standIn(t, s)
	var seen []string
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("seen",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				res, _ := out.Result.(*secretsmanager.GetSecretValueOutput)
				seen = append(seen, awsmiddleware.GetServiceID(ctx)+" "+awsmiddleware.GetOperationName(ctx)+" "+awsmiddleware.GetRegion(ctx)+" "+
					aws.ToString(in.Parameters.(*secretsmanager.GetSecretValueInput).SecretId)+" "+aws.ToString(res.ARN))
				return out, md, err
			}), middleware.After)
	})
	if _, err := secrets.New(cfg).GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("s")}); err != nil {
		t.Fatal(err)
	}
	if want := "Secrets Manager GetSecretValue eu-west-1 s arn:aws:secretsmanager:eu-west-1:1:secret:s-AbCdEf"; len(seen) != 1 || seen[0] != want {
		t.Errorf("seen %q, want [%q]", seen, want)
	}
}

// TestBadInputIsRefusedBeforeAnyRequest: no secret id, or per-call options, make no
// request.
func TestBadInputIsRefusedBeforeAnyRequest(t *testing.T) {
	s := &service{answers: []func(http.ResponseWriter){status(200, `{"SecretString":"v"}`)}}
	r := secrets.New(standIn(t, s))
	if _, err := r.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{}); err == nil {
		t.Error("no secret id: no error")
	}
	if _, err := r.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("s")}, func(*secretsmanager.Options) {}); err == nil {
		t.Error("per-call options: no error")
	}
	if len(s.requests) != 0 {
		t.Errorf("%d requests made", len(s.requests))
	}
}
