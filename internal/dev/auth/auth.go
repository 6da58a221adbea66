// Package auth lets the local stack play API Gateway's HTTP API JWT authorizer: an
// Authorizer checks bearer tokens exactly as the gateway's does, against keys it
// discovers from the issuer, and an Issuer is the local OpenID provider that mints them.
package auth

import (
	"errors"
	"fmt"
)

// ErrUnauthorized is matched (errors.Is) by every refusal API Gateway answers with
// 401 Unauthorized: a missing, malformed, badly signed, expired or otherwise invalid
// token, and signing keys that could not be had from the issuer. The error's text
// gives the reason and never contains the token.
var ErrUnauthorized = errors.New("auth: unauthorized")

// ErrForbidden is matched (errors.Is) by the refusal API Gateway answers with
// 403 Forbidden: a valid token that carries none of the route's authorization scopes.
var ErrForbidden = errors.New("auth: forbidden")

// unauthorized is a 401 refusal for a fixed reason; reasons are constant strings, so
// nothing from the token can end up in an error.
func unauthorized(reason string) error { return fmt.Errorf("%w: %s", ErrUnauthorized, reason) }
