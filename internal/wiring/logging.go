package wiring

import (
	"log/slog"
	"strings"
)

// EnvLogLevel is the lowest level logged: debug, info (the default), warn or error.
// At debug, the sweep logs every run, the ones that found nothing included.
const EnvLogLevel = "LOG_LEVEL"

// LogLevel reads LOG_LEVEL: info when unset, an error for anything but debug, info,
// warn or error (in any case).
func LogLevel(getenv Getenv) (slog.Level, error) {
	v := getenv(EnvLogLevel)
	switch strings.ToLower(v) {
	case "":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, bad(EnvLogLevel, v, "debug, info, warn or error")
}
