package httpapi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bikerental/bikerental/internal/domain/ident"
)

// DefaultOperatorScope is the token scope that opens operator routes unless
// Config.OperatorScope names another: a resource-server scope as Amazon Cognito
// writes them ("<resource server>/<scope>").
const DefaultOperatorScope = "bikerental/operator"

// realm names the protection space in WWW-Authenticate challenges (RFC 6750).
const realm = `Bearer realm="bikerental"`

// caller is who sent a request, from the claims API Gateway's JWT authorizer
// verified and passed in the request context. Nothing the client sends otherwise
// (headers, body, query) is ever read for it.
type caller struct {
	subject  string
	operator bool
}

// callerOf returns the verified caller of r, and false when the request carries no
// verified claims (no authorizer ran, or the token had no subject).
func (a *API) callerOf(r *request) (caller, bool) {
	auth := r.raw.RequestContext.Authorizer
	if auth == nil || auth.JWT == nil {
		return caller{}, false
	}
	sub := auth.JWT.Claims["sub"]
	if sub == "" {
		return caller{}, false
	}
	operator := hasScope(auth.JWT.Scopes, auth.JWT.Claims, a.cfg.OperatorScope)
	if operator && a.cfg.ConsoleClientID != "" && a.cfg.OperatorGroup != "" && auth.JWT.Claims["client_id"] == a.cfg.ConsoleClientID {
		// The console's client may grant the scope to any user of the pool: its
		// tokens are an operator's only for the operators' group.
		operator = inList(auth.JWT.Claims["cognito:groups"], a.cfg.OperatorGroup)
	}
	return caller{subject: sub, operator: operator}, true
}

// inList reports whether want is in a claim API Gateway passes as a string: a
// single value, or an array appearing as "[a b]".
func inList(claim, want string) bool {
	return slices.Contains(strings.Fields(strings.TrimSuffix(strings.TrimPrefix(claim, "["), "]")), want)
}

// hasScope reports whether want is among the token's scopes: the authorizer's list,
// or the "scope" claim (space-separated, OAuth 2.0) or "scp" claim, which API
// Gateway passes as a string, an array appearing as "[a b]".
func hasScope(scopes []string, claims map[string]string, want string) bool {
	if slices.Contains(scopes, want) {
		return true
	}
	for _, name := range []string{"scope", "scp"} {
		v := strings.TrimSuffix(strings.TrimPrefix(claims[name], "["), "]")
		if slices.Contains(strings.Fields(v), want) {
			return true
		}
	}
	return false
}

// authorize refuses a request its route's access does not allow: 401 without a
// verified token, 403 when an operator route is called without the operator scope
// or a renter route with a subject that cannot name a renter. It runs before the
// body is read, so a refused caller learns nothing about the request's content.
func (a *API) authorize(r *request, access Access) *response {
	if access == Public || access == Webhook {
		return nil
	}
	c, ok := a.callerOf(r)
	if !ok {
		resp := problem(ProblemUnauthenticated, "this route needs a bearer token from the service's identity provider in the Authorization header")
		resp.headers["WWW-Authenticate"] = realm
		return &resp
	}
	if access == Operator && !c.operator {
		resp := problem(ProblemForbidden, "this route is for operators: the token lacks the operator scope")
		resp.headers["WWW-Authenticate"] = fmt.Sprintf(`%s, error="insufficient_scope", scope=%q`, realm, a.cfg.OperatorScope)
		return &resp
	}
	if access == Renter && !ident.Valid(c.subject) {
		resp := problem(ProblemForbidden, "the token's subject cannot name a renter: it must match "+ident.Pattern)
		return &resp
	}
	r.caller = c
	return nil
}
