package wiring

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
)

// The rules of the settings, one per kind, each refusing a bad value with an error
// that names the variable. Every function checks all it reads before it creates an
// AWS client (CheckCore, CheckProcess, CheckProjection, CheckSweep and the *fn
// packages' Check), so that a setting which would make every request fail stops
// the function at start instead.

// ErrBadSetting reports an environment variable whose value the service refuses.
// Every such error is a *SettingError.
var ErrBadSetting = errors.New("bad setting")

// SettingError is a setting the service refuses, in the one form every refusal
// takes: `bad setting NAME="value": want …`, `bad setting NAME (not shown): want …`
// for a secret, whose value is never quoted, and `missing setting NAME: want …` for
// one that is needed and unset. It is ErrBadSetting, or ErrMissingSetting when
// Missing. Programs print it as it is, without the chain of who read the setting
// (Refused finds it).
type SettingError struct {
	Name    string // the environment variable
	Value   string // what it holds; never shown when Secret
	Secret  bool   // a secret: the value is left out of the message
	Missing bool   // needed and unset
	Want    string // what would be taken, in words
}

func (e *SettingError) Error() string {
	switch {
	case e.Missing:
		return fmt.Sprintf("missing setting %s: want %s", e.Name, e.Want)
	case e.Secret:
		return fmt.Sprintf("bad setting %s (not shown): want %s", e.Name, e.Want)
	}
	return fmt.Sprintf("bad setting %s=%q: want %s", e.Name, e.Value, e.Want)
}

// Is makes a SettingError ErrBadSetting, or ErrMissingSetting when Missing.
func (e *SettingError) Is(target error) bool {
	if e.Missing {
		return target == ErrMissingSetting
	}
	return target == ErrBadSetting
}

// Refused returns the SettingError err holds, if any: what a program tells its user
// when it refuses to start, in place of err's chain of who read the setting.
func Refused(err error) (*SettingError, bool) {
	var se *SettingError
	ok := errors.As(err, &se)
	return se, ok
}

// bad returns the error of a refused setting, its value quoted.
func bad(name, value, want string) error {
	return &SettingError{Name: name, Value: value, Want: want}
}

// BadSetting returns the error of a refused setting, its value quoted: the one form
// of ErrBadSetting for the settings read outside this package.
func BadSetting(name, value, want string) error { return bad(name, value, want) }

// BadSecret returns the error of a refused secret setting, which never quotes it.
func BadSecret(name, want string) error { return &SettingError{Name: name, Secret: true, Want: want} }

// MissingSetting returns the error of a needed setting that is unset.
func MissingSetting(name, want string) error {
	return &SettingError{Name: name, Missing: true, Want: want}
}

// tableName reports whether v is what DynamoDB takes as a table's name: 3 to 255
// of A-Z, a-z, 0-9, _, - and . (checked without a regular expression, which every
// function would compile at start).
func tableName(v string) bool { return Name(v, 3, 255, "_.-") }

// Name reports whether v has min to max bytes, each an ASCII letter, a digit or one
// of extra: how AWS names tables, secrets and schedule groups.
func Name(v string, min, max int, extra string) bool {
	if len(v) < min || len(v) > max {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// tableWant is what a table setting takes.
const tableWant = "a DynamoDB table's name (3 to 255 of A-Z, a-z, 0-9, _, - and .) or ARN"

// table reads the table setting name: a DynamoDB table's name, or its ARN. With
// need, an unset one is an error wrapping ErrMissingSetting; else it is "".
func table(getenv Getenv, name string, need bool) (string, error) {
	v := getenv(name)
	switch {
	case v == "" && need:
		return "", MissingSetting(name, tableWant)
	case v == "":
		return "", nil
	case tableName(v), strings.HasPrefix(v, "arn:") && strings.Contains(v, ":table/") && len(v) <= 1024:
		return v, nil
	}
	return "", bad(name, v, tableWant)
}

func intSetting(getenv Getenv, name string, def int) (int, error) {
	return boundedInt(getenv, name, def, 1<<31-1)
}

// boundedInt reads a whole number from 1 to max, def when unset.
func boundedInt(getenv Getenv, name string, def, max int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, bad(name, v, fmt.Sprintf("a whole number from 1 to %d", max))
	}
	return n, nil
}

func durationSetting(getenv Getenv, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, bad(name, v, "a positive duration such as 15m or 90s")
	}
	return d, nil
}

// RentalPrice reads RENTAL_PRICE_CENTS and RENTAL_CURRENCY (DefaultPrice when
// unset) by the payment's own rules (payment.CheckAmount, payment.CheckCurrency): a
// whole number of minor units from 1 to payment.MaxAmount, and an ISO 4217 code,
// taken in any case and returned in upper case ("eur" is EUR).
func RentalPrice(getenv Getenv) (process.Price, error) {
	price := DefaultPrice
	if v := getenv(EnvRentalPrice); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || payment.CheckAmount(n) != nil {
			return process.Price{}, bad(EnvRentalPrice, v, fmt.Sprintf("a whole number of cents from 1 to %d", payment.MaxAmount))
		}
		price.Amount = n
	}
	if v := getenv(EnvRentalCurrency); v != "" {
		price.Currency = strings.ToUpper(v)
		if err := payment.CheckCurrency(price.Currency); err != nil {
			return process.Price{}, bad(EnvRentalCurrency, v, "an ISO 4217 currency code, 3 letters, such as EUR")
		}
	}
	return price, nil
}

// RecordingMode reads RECORDING_MODE: append (the default) or command.
func RecordingMode(getenv Getenv) (process.RecordingMode, error) {
	mode, err := process.ParseRecordingMode(getenv(EnvRecordingMode))
	if err != nil {
		return mode, bad(EnvRecordingMode, getenv(EnvRecordingMode), fmt.Sprintf("%s or %s", process.RecordByAppend, process.RecordByCommand))
	}
	return mode, nil
}

// deadlineSettings are the Deadlines table's settings.
type deadlineSettings struct {
	table  string
	shards int
	ttl    time.Duration
}

// deadlineTableSettings reads DEADLINES_TABLE (with need, ErrNoDeadlinesTable when unset), DEADLINES_SHARDS (1 to
// deadlinetable.MaxShards) and, when writes, SETTLED_MARKER_TTL.
func deadlineTableSettings(getenv Getenv, need, writes bool) (deadlineSettings, error) {
	if need && getenv(EnvDeadlinesTable) == "" {
		return deadlineSettings{}, ErrNoDeadlinesTable
	}
	t, err := table(getenv, EnvDeadlinesTable, false)
	if err != nil {
		return deadlineSettings{}, err
	}
	shards, err := boundedInt(getenv, EnvDeadlinesShards, deadlinetable.DefaultShards, deadlinetable.MaxShards)
	if err != nil {
		return deadlineSettings{}, err
	}
	ttl := deadlinetable.DefaultMarkerTTL
	if writes {
		if ttl, err = durationSetting(getenv, EnvMarkerTTL, deadlinetable.DefaultMarkerTTL); err != nil {
			return deadlineSettings{}, err
		}
	}
	return deadlineSettings{table: t, shards: shards, ttl: ttl}, nil
}

// StuckRepair reads STUCK_REPAIR: true for auto (the default), false for off.
func StuckRepair(getenv Getenv) (bool, error) {
	switch v := getenv(EnvStuckRepair); v {
	case "off":
		return false, nil
	case "", "auto":
		return true, nil
	default:
		return false, bad(EnvStuckRepair, v, "auto or off")
	}
}

// MetricsService reads METRICS_SERVICE, the Service dimension of the metrics
// (bikerental when unset): what CloudWatch takes as a dimension's value, at most
// 255 printable ASCII characters, not all spaces.
func MetricsService(getenv Getenv) (string, error) {
	v := getenv(EnvMetricsService)
	if v == "" {
		return DefaultMetricsService, nil
	}
	if len(v) > 255 || strings.TrimSpace(v) == "" || strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		return "", bad(EnvMetricsService, v, "1 to 255 printable ASCII characters")
	}
	return v, nil
}

// Token reads a setting that is one token of printable ASCII without spaces (an
// OAuth scope, say), "" when unset.
func Token(getenv Getenv, name string) (string, error) {
	v := getenv(name)
	if strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) >= 0 || len(v) > 255 {
		return "", bad(name, v, "at most 255 printable ASCII characters, without spaces, quotes or backslashes")
	}
	return v, nil
}

// CheckCore validates, touching nothing, the settings Core reads: EVENTS_TABLE,
// RECORDING_MODE, RENTAL_PRICE_CENTS, RENTAL_CURRENCY, DEADLINES_TABLE and
// DEADLINES_SHARDS. The error names the first bad one.
func CheckCore(getenv Getenv) error {
	if _, err := table(getenv, EnvEventsTable, true); err != nil {
		return err
	}
	if _, err := RecordingMode(getenv); err != nil {
		return err
	}
	if _, err := RentalPrice(getenv); err != nil {
		return err
	}
	_, err := deadlineTableSettings(getenv, false, false)
	return err
}

// CheckProcess validates the settings the process reads: EVENTS_TABLE,
// RECORDING_MODE, RENTAL_PRICE_CENTS, RENTAL_CURRENCY and METRICS_SERVICE; its
// function's STREAM_CONCURRENCY is checked by streamfn.Batch.
func CheckProcess(getenv Getenv) error {
	if _, err := table(getenv, EnvEventsTable, true); err != nil {
		return err
	}
	if _, err := RecordingMode(getenv); err != nil {
		return err
	}
	if _, err := RentalPrice(getenv); err != nil {
		return err
	}
	_, err := MetricsService(getenv)
	return err
}

// CheckProjection validates the settings of the projection the projector writes:
// EVENTS_TABLE (where the records it cannot apply yet are parked), DEADLINES_TABLE
// (required), DEADLINES_SHARDS, SETTLED_MARKER_TTL, PAYMENT_TIMEOUT, STUCK_GRACE and
// RENTAL_PERIOD (the rows' due times); the projector's own STREAM_CONCURRENCY is
// checked by its function (StreamBatch).
func CheckProjection(getenv Getenv) error {
	if _, err := table(getenv, EnvEventsTable, true); err != nil {
		return err
	}
	if _, err := DeadlinePolicy(getenv); err != nil {
		return err
	}
	if _, err := deadlineTableSettings(getenv, true, true); err != nil {
		return err
	}
	_, err := RentalPeriod(getenv)
	return err
}

// CheckSweep validates the settings the sweep function reads: Core's, with
// DEADLINES_TABLE required, SETTLED_MARKER_TTL, PAYMENT_TIMEOUT, STUCK_GRACE,
// RENTAL_PERIOD, SWEEP_CONCURRENCY, METRICS_SERVICE and STUCK_REPAIR.
func CheckSweep(getenv Getenv) error {
	if err := CheckSweeper(getenv); err != nil {
		return err
	}
	_, err := MetricsService(getenv)
	return err
}

// CheckSweeper validates what the sweep reads whoever runs it (the sweep
// function, rentalctl sweep): CheckSweep's settings but METRICS_SERVICE, which
// only a sweep that writes metrics reads.
func CheckSweeper(getenv Getenv) error {
	if err := CheckCore(getenv); err != nil {
		return err
	}
	if _, err := RentalPeriod(getenv); err != nil {
		return err
	}
	if _, err := deadlineTableSettings(getenv, true, true); err != nil {
		return err
	}
	if _, err := DeadlinePolicy(getenv); err != nil {
		return err
	}
	if _, err := intSetting(getenv, EnvSweepConcurrency, deadlines.DefaultConcurrency); err != nil {
		return err
	}
	if _, err := SweepInterval(getenv); err != nil {
		return err
	}
	_, err := StuckRepair(getenv)
	return err
}

// secretID reports whether v is what Secrets Manager takes as a secret's name or
// ARN: 1 to 2048 of A-Z, a-z, 0-9 and /_+=.@:-.
func secretID(v string) bool { return Name(v, 1, 2048, "/_+=.@:-") }

// SecretID reads a setting naming a Secrets Manager secret (its name or ARN), ""
// when unset.
func SecretID(getenv Getenv, name string) (string, error) {
	v := getenv(name)
	if v != "" && !secretID(v) {
		return "", bad(name, v, "a Secrets Manager secret's name or ARN")
	}
	return v, nil
}

// SweepInterval reads SWEEP_RATE, the rate expression the sweep runs at,
// rate(1 minute) when unset, as the interval between two sweeps: what the kinds
// whose sends back off need to know (deadlines.SweeperConfig.Every). It takes
// rate(N unit), the unit second(s), minute(s) or hour(s): the template's SweepRate
// allows minutes and hours (EventBridge's), make run's sweep runs every few
// seconds (RateExpression).
func SweepInterval(getenv Getenv) (time.Duration, error) {
	v := getenv(EnvSweepRate)
	if v == "" {
		return time.Minute, nil
	}
	want := "rate(N second[s]), rate(N minute[s]) or rate(N hour[s]), N a whole number from 1"
	expr, ok := strings.CutPrefix(v, "rate(")
	expr, ok2 := strings.CutSuffix(expr, ")")
	n, unit, ok3 := strings.Cut(expr, " ")
	count, err := strconv.Atoi(n)
	if !ok || !ok2 || !ok3 || err != nil || count < 1 || count > 10000 || strconv.Itoa(count) != n {
		return 0, bad(EnvSweepRate, v, want)
	}
	switch unit {
	case "second", "seconds":
		return time.Duration(count) * time.Second, nil
	case "minute", "minutes":
		return time.Duration(count) * time.Minute, nil
	case "hour", "hours":
		return time.Duration(count) * time.Hour, nil
	}
	return 0, bad(EnvSweepRate, v, want)
}

// RateExpression is the rate expression of an interval, rounded up to the second
// (at least one), in hours or minutes where it is a whole number of them: what a
// sweep run every interval reads as SWEEP_RATE.
func RateExpression(interval time.Duration) string {
	n := max(int64((interval+time.Second-1)/time.Second), 1)
	switch {
	case n%3600 == 0:
		return fmt.Sprintf("rate(%d hours)", n/3600)
	case n%60 == 0:
		return fmt.Sprintf("rate(%d minutes)", n/60)
	}
	return fmt.Sprintf("rate(%d seconds)", n)
}

// BoundedInt reads a whole-number setting from 1 to max, def when unset. The error
// wraps ErrBadSetting and names the variable.
func BoundedInt(getenv Getenv, name string, def, max int) (int, error) {
	return boundedInt(getenv, name, def, max)
}
