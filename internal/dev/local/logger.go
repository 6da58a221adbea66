package local

import (
	"io"
	"log/slog"

	"github.com/bikerental/bikerental/internal/wiring"
)

// EnvLogFormat is how the local stack logs: text (the default) or json.
const EnvLogFormat = "LOG_FORMAT"

// NewLogger returns the local stack's logger, writing to w as LOG_FORMAT says, at
// LOG_LEVEL (wiring.LogLevel: info by default, debug for the sweeps that found
// nothing too). Another value of either is an error.
func NewLogger(getenv wiring.Getenv, w io.Writer) (*slog.Logger, error) {
	level, err := wiring.LogLevel(getenv)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: level}
	switch v := getenv(EnvLogFormat); v {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, wiring.BadSetting(EnvLogFormat, v, "text or json")
	}
}
