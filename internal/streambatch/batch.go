// Package streambatch runs a Lambda DynamoDB stream batch of the Events table
// through a handler: each record's new image is decoded back into the event record
// that was appended (dynamo.DecodeImage, the one decoder of stored records), and
// failures are reported per record, the way Lambda's event source mapping expects
// with ReportBatchItemFailures. It does not read the stream itself; package
// streampoll plays the event source mapping locally.
package streambatch

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
	"github.com/bikerental/bikerental/internal/schema"
)

// Handler handles one event record delivered from the Events table's stream.
// Deliveries are at least once, so it must be idempotent. An error makes the record
// (and every later one of its batch) be delivered again.
type Handler func(ctx context.Context, r eventstore.Record) error

// DeadlineMargin is how much time before its context's deadline HandleBatch stops
// starting records. A record it does not start is reported as failed, so that Lambda
// delivers it again rather than the invocation being cut off half-way through it.
const DeadlineMargin = 2 * time.Second

// HandleBatch runs the records of a Lambda DynamoDB stream event through h, in order,
// and returns the response Lambda expects when the event source mapping reports
// batch item failures (FunctionResponseTypes: ReportBatchItemFailures).
//
// Records other than INSERTs are skipped without a log line: the Events table is
// append-only, so nothing else is an event. Each INSERT's new image is decoded with
// dynamo.DecodeImage and passed to h. HandleBatch stops at the first record that fails: its
// image cannot be decoded, h returns an error or panics, ctx is done, or ctx's
// deadline is less than DeadlineMargin away before the record is started (h is then
// not called). The response then names exactly that record's sequence number, so
// Lambda delivers it and everything after it again; on success it names none.
//
// HandleBatch never panics. It logs each failure with the record's stream id and
// version (for a record it cannot decode, those it can read, and its sequence
// number) and one summary line per batch, never a record's payload. A nil logger
// means slog.Default().
func HandleBatch(ctx context.Context, ev events.DynamoDBEvent, h Handler, logger *slog.Logger) events.DynamoDBEventResponse {
	if logger == nil {
		logger = slog.Default()
	}
	handled, skipped := 0, 0
	failed, stopped := "", false
	for _, rec := range ev.Records {
		if rec.EventName != string(events.DynamoDBOperationTypeInsert) {
			skipped++
			continue
		}
		if err := startable(ctx); err != nil {
			logger.LogAttrs(ctx, slog.LevelWarn, "stream record not started",
				append(imageAttrs(rec), slog.String("error", err.Error()))...)
			failed, stopped = rec.Change.SequenceNumber, true
			break
		}
		r, err := dynamo.DecodeImage(rec.Change.NewImage)
		if err != nil {
			logger.LogAttrs(ctx, slog.LevelError, "stream record cannot be decoded",
				append(imageAttrs(rec), slog.String("error", err.Error()))...)
			failed, stopped = rec.Change.SequenceNumber, true
			break
		}
		if err := call(ctx, h, r); err != nil {
			logger.LogAttrs(ctx, slog.LevelError, "stream record handler failed",
				slog.String("sequenceNumber", rec.Change.SequenceNumber),
				slog.String("streamId", r.StreamID),
				slog.Int64("version", r.Version),
				slog.String("type", r.Type),
				slog.String("error", err.Error()))
			failed, stopped = rec.Change.SequenceNumber, true
			break
		}
		handled++
	}
	attrs := []slog.Attr{
		slog.Int("records", len(ev.Records)),
		slog.Int("handled", handled),
		slog.Int("skipped", skipped),
	}
	level := slog.LevelInfo
	var resp events.DynamoDBEventResponse
	if stopped {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("failedSequenceNumber", failed))
		resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: failed}}
	}
	logger.LogAttrs(ctx, level, "stream batch", attrs...)
	return resp
}

// startable reports why a record must not be started now, if it must not.
func startable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok {
		if left := time.Until(deadline); left < DeadlineMargin {
			return fmt.Errorf("%s left before the deadline, less than the %s margin", left.Round(time.Millisecond), DeadlineMargin)
		}
	}
	return nil
}

// call runs h, turning a panic into an error so that one record cannot crash the
// invocation and take the rest of the batch's progress with it.
func call(ctx context.Context, h Handler, r eventstore.Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, r)
}

// imageAttrs identifies a record that may not decode: by its sequence number, and by
// its stream id and version where the image holds them with the right types.
func imageAttrs(rec events.DynamoDBEventRecord) []slog.Attr {
	attrs := []slog.Attr{slog.String("sequenceNumber", rec.Change.SequenceNumber)}
	image := rec.Change.NewImage
	if v, ok := image[schema.EventsStreamID]; ok && v.DataType() == events.DataTypeString && !v.IsNull() {
		attrs = append(attrs, slog.String("streamId", v.String()))
	}
	if v, ok := image[schema.EventsVersion]; ok && v.DataType() == events.DataTypeNumber && !v.IsNull() {
		attrs = append(attrs, slog.String("version", v.Number()))
	}
	return attrs
}
