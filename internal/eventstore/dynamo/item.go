package dynamo

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/schema"
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
// eventstore.ErrCorruptRecord.
func DecodeRecord(item map[string]types.AttributeValue) (eventstore.Record, error) {
	var r eventstore.Record
	var err error
	str := func(name string, required bool) string {
		v, ok := item[name]
		if !ok {
			if required && err == nil {
				err = fmt.Errorf("%w: missing %s", eventstore.ErrCorruptRecord, name)
			}
			return ""
		}
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			if err == nil {
				err = fmt.Errorf("%w: %s is not a string", eventstore.ErrCorruptRecord, name)
			}
			return ""
		}
		return s.Value
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
	v, ok := item[schema.EventsVersion].(*types.AttributeValueMemberN)
	if !ok {
		return eventstore.Record{}, fmt.Errorf("%w: %s missing or not a number", eventstore.ErrCorruptRecord, schema.EventsVersion)
	}
	if r.Version, err = strconv.ParseInt(v.Value, 10, 64); err != nil || r.Version < 1 {
		return eventstore.Record{}, fmt.Errorf("%w: %s %q is not a positive integer", eventstore.ErrCorruptRecord, schema.EventsVersion, v.Value)
	}
	if r.RecordedAt, err = time.Parse(time.RFC3339Nano, recordedAt); err != nil {
		return eventstore.Record{}, fmt.Errorf("%w: %s: %v", eventstore.ErrCorruptRecord, schema.EventsRecordedAt, err)
	}
	if tags, ok := item[schema.EventsTags]; ok {
		list, ok := tags.(*types.AttributeValueMemberL)
		if !ok {
			return eventstore.Record{}, fmt.Errorf("%w: %s is not a list", eventstore.ErrCorruptRecord, schema.EventsTags)
		}
		for _, t := range list.Value {
			s, ok := t.(*types.AttributeValueMemberS)
			if !ok {
				return eventstore.Record{}, fmt.Errorf("%w: a tag is not a string", eventstore.ErrCorruptRecord)
			}
			if r.Tags == nil {
				r.Tags = make([]string, 0, len(list.Value))
			}
			r.Tags = append(r.Tags, s.Value)
		}
	}
	return r, nil
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
