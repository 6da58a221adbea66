package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"

	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

// TokenPath is where the local stack serves its token handler.
const TokenPath = "/local/tokens"

// MaxTokenRequestBytes is the largest body the token handler reads; a larger one
// gets 413.
const MaxTokenRequestBytes = 4 << 10

// problemBase prefixes the type URI of the problems the token handler answers with,
// as it does those of the service's API.
const problemBase = "https://github.com/bikerental/bikerental/blob/main/README.md#problem-"

// subPattern is what a sub asked of the token handler must match.
var subPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// TokenRequest is the body of a POST to the token handler.
type TokenRequest struct {
	// Sub is the token's subject; required, and matching ^[A-Za-z0-9_-]{1,64}$.
	Sub string `json:"sub"`
	// Operator asks for a token carrying the operator scope.
	Operator bool `json:"operator,omitempty"`
}

// TokenResponse is the body of the token handler's 200 answer.
type TokenResponse struct {
	// Token is the signed JWT.
	Token string `json:"token"`
	// ExpiresIn is the token's lifetime in seconds.
	ExpiresIn int64 `json:"expiresIn"`
}

// Problem is an RFC 9457 problem details body, as the token handler and the
// discovery handlers answer errors (Content-Type application/problem+json).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// TokenHandler returns the handler of POST TokenPath, whatever path it is mounted at.
// Its body is a TokenRequest, JSON, at most MaxTokenRequestBytes: one object with
// the members "sub" (a string, required) and "operator" (a boolean, optional), each
// at most once, followed by nothing but whitespace. It answers 200 with a
// TokenResponse whose token Mint made for sub with DefaultTokenLifetime, carrying
// operatorScope as its only scope when operator is true and no scope otherwise. It
// answers a body it refuses with 400 (413 when too large), another method with 405,
// always as an application/problem+json Problem. With an empty operatorScope,
// operator tokens are refused (400).
func (i *Issuer) TokenHandler(operatorScope string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeProblem(w, http.StatusMethodNotAllowed, "about:blank", "only POST is allowed")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxTokenRequestBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeProblem(w, http.StatusRequestEntityTooLarge, "about:blank", fmt.Sprintf("the body must be at most %d bytes", MaxTokenRequestBytes))
				return
			}
			writeProblem(w, http.StatusBadRequest, "invalid-request", "the body could not be read")
			return
		}
		req, err := parseTokenRequest(body)
		if err != nil {
			writeProblem(w, http.StatusBadRequest, "invalid-request", err.Error())
			return
		}
		var scopes []string
		if req.Operator {
			if operatorScope == "" {
				writeProblem(w, http.StatusBadRequest, "invalid-request", "operator tokens are not issued here")
				return
			}
			scopes = []string{operatorScope}
		}
		token, err := i.Mint(req.Sub, scopes, DefaultTokenLifetime)
		if err != nil {
			writeProblem(w, http.StatusInternalServerError, "about:blank", "the token could not be minted")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		json.NewEncoder(w).Encode(TokenResponse{Token: token, ExpiresIn: int64(DefaultTokenLifetime.Seconds())})
	})
}

// parseTokenRequest reads body as strictjson.Decode does: one JSON object, member
// names matched exactly (not case-insensitively, as encoding/json would), no member
// twice, no unknown member, no null, and only whitespace after the object. Its
// errors are the problem details to answer with.
func parseTokenRequest(body []byte) (TokenRequest, error) {
	var req TokenRequest
	if err := strictjson.Decode(body, &req); err != nil {
		return TokenRequest{}, err
	}
	switch {
	case req.Sub == "":
		return TokenRequest{}, errors.New("sub is required")
	case !subPattern.MatchString(req.Sub):
		return TokenRequest{}, errors.New("sub must be 1 to 64 letters, digits, '_' or '-'")
	}
	return req, nil
}

// writeProblem answers with an RFC 9457 problem; typ is "about:blank" or a problem
// name the README defines.
func writeProblem(w http.ResponseWriter, status int, typ, detail string) {
	if typ != "about:blank" {
		typ = problemBase + typ
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: detail})
}

// Handler returns a handler of all three: the token handler at TokenPath, and the
// Issuer's discovery document and JWKS (ServeHTTP) at every other path.
func (i *Issuer) Handler(operatorScope string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(TokenPath, i.TokenHandler(operatorScope))
	mux.Handle("/", i)
	return mux
}
