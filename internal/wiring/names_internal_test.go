package wiring

import (
	"strings"
	"testing"
)

// TestTableAndSecretNames holds the checks of table names and secret ids to what
// DynamoDB and Secrets Manager take, at their edges.
func TestTableAndSecretNames(t *testing.T) {
	for v, want := range map[string]bool{
		"abc": true, "ab": false, "bikerental-dev_events.v2": true, strings.Repeat("a", 255): true,
		strings.Repeat("a", 256): false, "bike events": false, "bikes/events": false, "événements": false, "": false,
	} {
		if got := tableName(v); got != want {
			t.Errorf("tableName(%q) = %v, want %v", v, got, want)
		}
	}
	for v, want := range map[string]bool{
		"bikerental/stripe": true, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:bikerental/stripe-AbCdEf": true,
		"a+b=c.d@e": true, strings.Repeat("s", 2048): true, strings.Repeat("s", 2049): false,
		"bikerental stripe": false, "bikerental\nstripe": false, "": false,
	} {
		if got := secretID(v); got != want {
			t.Errorf("secretID(%q) = %v, want %v", v, got, want)
		}
	}
}
