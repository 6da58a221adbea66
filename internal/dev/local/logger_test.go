package local_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/dev/local"
)

// TestTheLocalLoggerFollowsLogFormatAndLogLevel: LOG_FORMAT picks text or JSON,
// LOG_LEVEL the lowest level written (info by default), and any other value of
// either is refused.
func TestTheLocalLoggerFollowsLogFormatAndLogLevel(t *testing.T) {
	for _, c := range []struct {
		name      string
		env       map[string]string
		debug     bool // a debug line is written
		json      bool
		refused   bool
		refusedOf string
	}{
		{name: "defaults"},
		{name: "debug", env: map[string]string{"LOG_LEVEL": "debug"}, debug: true},
		{name: "debug in capitals, json", env: map[string]string{"LOG_LEVEL": "DEBUG", "LOG_FORMAT": "json"}, debug: true, json: true},
		{name: "warn", env: map[string]string{"LOG_LEVEL": "warn"}},
		{name: "unknown level", env: map[string]string{"LOG_LEVEL": "chatty"}, refused: true, refusedOf: "LOG_LEVEL"},
		{name: "unknown format", env: map[string]string{"LOG_FORMAT": "xml"}, refused: true, refusedOf: "LOG_FORMAT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			logger, err := local.NewLogger(func(k string) string { return c.env[k] }, &out)
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), c.refusedOf) {
					t.Fatalf("err = %v, want %s refused", err, c.refusedOf)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			logger.Debug("quiet sweep")
			logger.Warn("stuck rental")
			if got := strings.Contains(out.String(), "quiet sweep"); got != c.debug {
				t.Errorf("debug line written: %v, want %v:\n%s", got, c.debug, out.String())
			}
			if !strings.Contains(out.String(), "stuck rental") {
				t.Errorf("the warning is missing:\n%s", out.String())
			}
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if json.Valid([]byte(line)) != c.json {
					t.Errorf("line %q: JSON %v, want %v", line, !c.json, c.json)
				}
			}
		})
	}
}
