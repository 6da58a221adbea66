package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/aws/aws-lambda-go/lambda"
)

// Invoker invokes one Lambda function with a JSON payload and returns its JSON
// result, as the Lambda service does. A function error is an error.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// InProcess returns an Invoker that runs handler (any handler lambda.Start accepts)
// in this process, with the same JSON encoding and decoding on both sides as on AWS.
// It is safe for concurrent use: like Lambda, which gives each instance of a
// function one invocation at a time, it runs each invocation on a handler no other
// invocation holds meanwhile, and returns a result of its own.
func InProcess(handler any) Invoker {
	p := &inProcess{}
	p.handlers.New = func() any { return lambda.NewHandler(handler) }
	return p
}

// inProcess keeps the lambda.Handler values its invocations run on. A handler's
// Invoke returns the bytes of an output buffer that it has already given back to
// its own pool for the next invocation to write into; read while another
// invocation of the same handler runs, they are that one's result, half-written.
// So a handler is held by one invocation at a time, and its result is copied
// before the handler is let go.
type inProcess struct{ handlers sync.Pool }

func (p *inProcess) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	h := p.handlers.Get().(lambda.Handler)
	defer p.handlers.Put(h)
	result, err := h.Invoke(ctx, payload)
	return bytes.Clone(result), err
}

// RIE invokes a function running under the AWS Lambda Runtime Interface Emulator,
// through its invoke endpoint. The emulator serves one invocation at a time and fails
// on concurrent ones, so RIE lets one through at a time. It is safe for concurrent use.
type RIE struct {
	// URL is the emulator's address, e.g. "http://127.0.0.1:9001".
	URL    string
	Client *http.Client

	mu sync.Mutex
}

// FunctionError is the error a function returned, as the emulator reports it: with
// status 200 and a body naming the error.
type FunctionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function error %s: %s", e.Type, e.Message)
}

// Invoke implements Invoker.
func (r *RIE) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/2015-03-31/functions/function/invocations", bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("local: invoke %s: %w", r.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("local: invoke %s: %w", r.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("local: invoke %s: status %s: %s", r.URL, resp.Status, body)
	}
	// A function error comes back as 200 with {"errorType":..., "errorMessage":...}.
	var fe FunctionError
	if json.Unmarshal(body, &fe) == nil && fe.Type != "" {
		return nil, &fe
	}
	return body, nil
}

// Call invokes inv with in encoded as JSON and decodes the result into out (unless
// out is nil), as the Lambda service does for a caller.
func Call(ctx context.Context, inv Invoker, in, out any) error {
	payload, err := json.Marshal(in)
	if err != nil {
		return err
	}
	result, err := inv.Invoke(ctx, payload)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(result, out); err != nil {
		return fmt.Errorf("local: function result %.200q: %w", result, err)
	}
	return nil
}
