package awslambda

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
)

// Items describes a table that keeps one item per event, appended and never
// changed, as most event stores on DynamoDB do: which attribute of an item holds
// each part of its event. Its Decoder reads the table's stream.
type Items struct {
	// Stream names the string attribute of the stream the event belongs to: an
	// order's id.
	Stream string
	// Position names the number attribute of the event's place in its stream,
	// from 1.
	Position string
	// Type names the string attribute of the event's type. An item without it is
	// not an event (a table may keep other items beside its events) and is skipped.
	Type string
	// At names the attribute of when the event was recorded: a string in RFC 3339,
	// or a number of milliseconds since the Unix epoch.
	At string
	// Data, if not empty, names the string or binary attribute of the event's body
	// (deadlines.Record.Data); an item without it has no body.
	Data string
}

// Decoder returns the decoder of a stream of the table it describes, or what is
// wrong with the description (a part not named, two parts named alike). The
// decoder reads the new image of each INSERT; a MODIFY or a REMOVE (a time to live
// that expires, an item changed by hand) is not an event. An event whose stream,
// position or time is missing, or held in another type, is an error wrapping
// deadlines.ErrCorruptRecord, with what could be read of it; so is an INSERT
// without its new image: the stream must carry new images (StreamViewType
// NEW_IMAGE or NEW_AND_OLD_IMAGES).
func (it Items) Decoder() (Decoder, error) {
	var errs []error
	seen := map[string]string{}
	for _, part := range []struct{ what, name string }{
		{"Stream", it.Stream}, {"Position", it.Position}, {"Type", it.Type}, {"At", it.At}, {"Data", it.Data},
	} {
		switch {
		case part.name == "" && part.what != "Data":
			errs = append(errs, fmt.Errorf("%s: no attribute named", part.what))
		case part.name == "":
		case seen[part.name] != "":
			errs = append(errs, fmt.Errorf("%s: attribute %q is %s's too", part.what, part.name, seen[part.name]))
		default:
			seen[part.name] = part.what
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("awslambda: items: %w", err)
	}
	return it.decode, nil
}

// decode reads one stream record of the table.
func (it Items) decode(rec events.DynamoDBEventRecord) (deadlines.Record, bool, error) {
	if rec.EventName != string(events.DynamoDBOperationTypeInsert) {
		return deadlines.Record{}, false, nil
	}
	img := rec.Change.NewImage
	if len(img) == 0 {
		return deadlines.Record{}, false, fmt.Errorf("%w: an insert without its new image: the stream must carry new images", deadlines.ErrCorruptRecord)
	}
	typ, ok := img[it.Type]
	if !ok || typ.DataType() == events.DataTypeNull {
		return deadlines.Record{}, false, nil
	}
	var errs []error
	text := func(name string) string {
		v, ok := img[name]
		if !ok || v.DataType() != events.DataTypeString || v.String() == "" {
			errs = append(errs, fmt.Errorf("%s: want a non-empty string", name))
			return ""
		}
		return v.String()
	}
	r := deadlines.Record{Stream: text(it.Stream), Type: text(it.Type)}
	if v, ok := img[it.Position]; !ok || v.DataType() != events.DataTypeNumber {
		errs = append(errs, fmt.Errorf("%s: want a number", it.Position))
	} else if p, err := strconv.ParseInt(v.Number(), 10, 64); err != nil || p < 1 {
		errs = append(errs, fmt.Errorf("%s: %q: want a whole number from 1", it.Position, v.Number()))
	} else {
		r.Position = p
	}
	r.At = it.at(img, &errs)
	if it.Data != "" {
		switch v, ok := img[it.Data]; {
		case !ok || v.DataType() == events.DataTypeNull:
		case v.DataType() == events.DataTypeString:
			r.Data = []byte(v.String())
		case v.DataType() == events.DataTypeBinary:
			r.Data = v.Binary()
		default:
			errs = append(errs, fmt.Errorf("%s: want a string or binary body", it.Data))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return r, false, fmt.Errorf("%w: %s %s at %d: %w", deadlines.ErrCorruptRecord, r.Type, r.Stream, r.Position, err)
	}
	r.Source = img
	return r, true, nil
}

// at reads when the event was recorded.
func (it Items) at(img map[string]events.DynamoDBAttributeValue, errs *[]error) time.Time {
	v, ok := img[it.At]
	switch {
	case ok && v.DataType() == events.DataTypeString:
		t, err := time.Parse(time.RFC3339Nano, v.String())
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s: %q: want a time in RFC 3339", it.At, v.String()))
		}
		return t
	case ok && v.DataType() == events.DataTypeNumber:
		ms, err := strconv.ParseInt(v.Number(), 10, 64)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s: %q: want whole milliseconds since the Unix epoch", it.At, v.Number()))
		}
		return time.UnixMilli(ms).UTC()
	}
	*errs = append(*errs, fmt.Errorf("%s: want a string in RFC 3339 or a number of milliseconds", it.At))
	return time.Time{}
}
