package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
)

// decodeClaims decodes a JWT payload into its claims, numbers kept as written.
func decodeClaims(payload []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var claims map[string]any
	if err := dec.Decode(&claims); err != nil {
		return nil, err
	}
	if claims == nil {
		return nil, errors.New("claims are not an object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the claims")
	}
	return claims, nil
}

// claimStrings renders claims as API Gateway hands them to the function: strings as
// they are, numbers in decimal, booleans as true or false, arrays as "[a b c]". That
// array form is the rendering of Go's fmt package, and the rest follows it: objects
// are "map[k:v ...]" with their keys sorted, and null is "<nil>".
func claimStrings(claims map[string]any) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		out[k] = claimString(v)
	}
	return out
}

func claimString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return decimal(v)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "<nil>"
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = claimString(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ":" + claimString(v[k])
		}
		return "map[" + strings.Join(parts, " ") + "]"
	}
	return "" // decodeClaims produces no other type
}

// decimal writes a JSON number without an exponent: integers as written (so no
// precision is lost on large ones), others through float64.
func decimal(n json.Number) string {
	s := string(n)
	if !strings.ContainsAny(s, "eE") {
		return s
	}
	f, err := n.Float64()
	if err != nil {
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// tokenScopes returns the token's scopes: the space-separated "scope" claim, or
// failing that the "scp" claim, a space-separated string or an array of strings.
func tokenScopes(claims map[string]any) []string {
	if s, ok := claims["scope"].(string); ok {
		return nilIfEmpty(strings.Fields(s))
	}
	switch scp := claims["scp"].(type) {
	case string:
		return nilIfEmpty(strings.Fields(scp))
	case []any:
		var out []string
		for _, e := range scp {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
