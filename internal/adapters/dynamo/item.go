package dynamo

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// EncodeRecord returns the Events table item for r.
func EncodeRecord(r eventstore.Record) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		schema.EventsStreamID:   &types.AttributeValueMemberS{Value: r.StreamID},
		schema.EventsVersion:    &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Version, 10)},
		schema.EventsEventID:    &types.AttributeValueMemberS{Value: r.ID},
		schema.EventsType:       &types.AttributeValueMemberS{Value: r.Type},
		schema.EventsData:       &types.AttributeValueMemberS{Value: string(r.Data)},
		schema.EventsRecordedAt: &types.AttributeValueMemberS{Value: r.RecordedAt.UTC().Format(time.RFC3339Nano)},
	}
	if len(r.Tags) > 0 {
		tags := make([]types.AttributeValue, len(r.Tags))
		for i, t := range r.Tags {
			tags[i] = &types.AttributeValueMemberS{Value: t}
		}
		item[schema.EventsTags] = &types.AttributeValueMemberL{Value: tags}
	}
	if r.CorrelationID != "" {
		item[schema.EventsCorrelationID] = &types.AttributeValueMemberS{Value: r.CorrelationID}
	}
	if r.CausationID != "" {
		item[schema.EventsCausationID] = &types.AttributeValueMemberS{Value: r.CausationID}
	}
	return item
}

// DecodeRecord reads an Events table item back into a Record. An item that lacks a
// required attribute or holds one of the wrong type yields an error matching
// eventstore.ErrCorruptRecord. Attributes the table does not define are ignored.
func DecodeRecord(item map[string]types.AttributeValue) (eventstore.Record, error) {
	return decode(sdkItem(item))
}

// attributes is an Events item in either of its two forms: the SDK's, as Query
// returns it, or a stream record's image, as Lambda delivers it (DecodeImage). One
// decoder reads both, so that a record means the same whichever way it arrives.
type attributes interface {
	// str returns a string attribute; present is false when it is absent, and ok
	// false when it holds another type, or no value.
	str(name string) (value string, present, ok bool)
	// num returns a number attribute, as str does.
	num(name string) (value string, present, ok bool)
	// strs returns a list attribute whose every element is a string, as str does.
	strs(name string) (values []string, present, ok bool)
}

// decode reads an Events item back into a Record (see DecodeRecord).
func decode(item attributes) (eventstore.Record, error) {
	var r eventstore.Record
	var err error
	str := func(name string, required bool) string {
		v, present, ok := item.str(name)
		switch {
		case !present:
			if required && err == nil {
				err = fmt.Errorf("%w: missing %s", eventstore.ErrCorruptRecord, name)
			}
		case !ok:
			if err == nil {
				err = fmt.Errorf("%w: %s is not a string", eventstore.ErrCorruptRecord, name)
			}
		}
		return v
	}
	r.StreamID = str(schema.EventsStreamID, true)
	r.ID = str(schema.EventsEventID, true)
	r.Type = str(schema.EventsType, true)
	r.Data = []byte(str(schema.EventsData, true))
	recordedAt := str(schema.EventsRecordedAt, true)
	r.CorrelationID = str(schema.EventsCorrelationID, false)
	r.CausationID = str(schema.EventsCausationID, false)
	if err != nil {
		return eventstore.Record{}, err
	}
	for _, f := range [...]struct{ name, value string }{
		{schema.EventsStreamID, r.StreamID}, {schema.EventsEventID, r.ID}, {schema.EventsType, r.Type},
	} {
		if f.value == "" {
			return eventstore.Record{}, fmt.Errorf("%w: %s is empty", eventstore.ErrCorruptRecord, f.name)
		}
	}
	if !json.Valid(r.Data) {
		return eventstore.Record{}, fmt.Errorf("%w: %s is not JSON", eventstore.ErrCorruptRecord, schema.EventsData)
	}
	v, present, ok := item.num(schema.EventsVersion)
	if !present || !ok {
		return eventstore.Record{}, fmt.Errorf("%w: %s missing or not a number", eventstore.ErrCorruptRecord, schema.EventsVersion)
	}
	if r.Version, err = strconv.ParseInt(v, 10, 64); err != nil || r.Version < 1 {
		return eventstore.Record{}, fmt.Errorf("%w: %s %q is not a positive integer", eventstore.ErrCorruptRecord, schema.EventsVersion, v)
	}
	if r.RecordedAt, err = time.Parse(time.RFC3339Nano, recordedAt); err != nil {
		return eventstore.Record{}, fmt.Errorf("%w: %s: %v", eventstore.ErrCorruptRecord, schema.EventsRecordedAt, err)
	}
	tags, present, ok := item.strs(schema.EventsTags)
	if present && !ok {
		return eventstore.Record{}, fmt.Errorf("%w: %s is not a list of strings", eventstore.ErrCorruptRecord, schema.EventsTags)
	}
	if len(tags) > 0 {
		r.Tags = tags
	}
	return r, nil
}

// sdkItem is an item in the SDK's form.
type sdkItem map[string]types.AttributeValue

func (it sdkItem) str(name string) (string, bool, bool) {
	v, present := it[name]
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		return "", present, false
	}
	return s.Value, true, true
}

func (it sdkItem) num(name string) (string, bool, bool) {
	v, present := it[name]
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return "", present, false
	}
	return n.Value, true, true
}

func (it sdkItem) strs(name string) ([]string, bool, bool) {
	v, present := it[name]
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil, present, false
	}
	out := make([]string, 0, len(l.Value))
	for _, e := range l.Value {
		s, ok := e.(*types.AttributeValueMemberS)
		if !ok {
			return nil, true, false
		}
		out = append(out, s.Value)
	}
	return out, true, true
}

// RecordSize is the size DynamoDB bills and limits for r's item, by its published
// rules: each attribute's name plus its value (strings by UTF-8 length, numbers at
// most 21 bytes, lists 3 bytes plus 1 byte and the size of each element).
// It is the size of EncodeRecord(r)'s item, counted without building the item, whose
// payload alone is a copy of up to 400 KB; the version number is counted by all its
// digits, trailing zeros included, so the figure is exact or a few bytes over.
func RecordSize(r eventstore.Record) int {
	var buf [64]byte
	n := len(schema.EventsStreamID) + len(r.StreamID) +
		len(schema.EventsVersion) + (len(strconv.AppendInt(buf[:0], r.Version, 10))+1)/2 + 1 +
		len(schema.EventsEventID) + len(r.ID) +
		len(schema.EventsType) + len(r.Type) +
		len(schema.EventsData) + len(r.Data) +
		len(schema.EventsRecordedAt) + len(r.RecordedAt.UTC().AppendFormat(buf[:0], time.RFC3339Nano))
	if len(r.Tags) > 0 {
		n += len(schema.EventsTags) + 3
		for _, t := range r.Tags {
			n += 1 + len(t)
		}
	}
	if r.CorrelationID != "" {
		n += len(schema.EventsCorrelationID) + len(r.CorrelationID)
	}
	if r.CausationID != "" {
		n += len(schema.EventsCausationID) + len(r.CausationID)
	}
	return n
}
