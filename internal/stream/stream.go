// Package stream is what the Lambda functions on the Events table's stream use to
// handle a batch: it decodes each record's new image back into the event record that
// was appended and runs the batch through a handler, reporting batch item failures the
// way Lambda's event source mapping expects. It does not read the stream itself;
// package streampoll plays the event source mapping locally.
package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
	"github.com/bikerental/bikerental/internal/schema"
)

// DecodeImage reads the new image of an Events table stream record back into the
// record that was appended. An image that is empty, holds an attribute without a
// value, or is not a valid Events item (see dynamo.DecodeRecord) yields an error
// matching eventstore.ErrCorruptRecord. DecodeImage does not panic, whatever the
// image holds.
func DecodeImage(image map[string]events.DynamoDBAttributeValue) (eventstore.Record, error) {
	if len(image) == 0 {
		return eventstore.Record{}, fmt.Errorf("%w: the stream record has no new image", eventstore.ErrCorruptRecord)
	}
	if r, ok := decodeEventsItem(image); ok {
		return r, nil
	}
	item, err := toItem(image)
	if err != nil {
		return eventstore.Record{}, err
	}
	return dynamo.DecodeRecord(item)
}

// decodeEventsItem reads an image straight into a record when it is a valid Events
// item, every attribute one the table defines and of its type, as every image the
// store writes is. That spares converting each attribute to the SDK's form first,
// which costs an allocation per attribute. Anything else, ok false, takes the
// general path, which decodes it the same way or says what is wrong with it.
func decodeEventsItem(image map[string]events.DynamoDBAttributeValue) (r eventstore.Record, ok bool) {
	var data, recordedAt string
	var haveData, haveRecordedAt, haveVersion bool
	for name, v := range image {
		switch name {
		case schema.EventsVersion:
			if v.DataType() != events.DataTypeNumber || v.IsNull() {
				return r, false
			}
			n, err := strconv.ParseInt(v.Number(), 10, 64)
			if err != nil || n < 1 {
				return r, false
			}
			r.Version, haveVersion = n, true
		case schema.EventsTags:
			if v.DataType() != events.DataTypeList || v.IsNull() {
				return r, false
			}
			list := v.List()
			for _, t := range list {
				if t.DataType() != events.DataTypeString || t.IsNull() {
					return r, false
				}
				if r.Tags == nil {
					r.Tags = make([]string, 0, len(list))
				}
				r.Tags = append(r.Tags, t.String())
			}
		case schema.EventsStreamID, schema.EventsEventID, schema.EventsType, schema.EventsData,
			schema.EventsRecordedAt, schema.EventsCorrelationID, schema.EventsCausationID:
			if v.DataType() != events.DataTypeString || v.IsNull() {
				return r, false
			}
			switch s := v.String(); name {
			case schema.EventsStreamID:
				r.StreamID = s
			case schema.EventsEventID:
				r.ID = s
			case schema.EventsType:
				r.Type = s
			case schema.EventsData:
				data, haveData = s, true
			case schema.EventsRecordedAt:
				recordedAt, haveRecordedAt = s, true
			case schema.EventsCorrelationID:
				r.CorrelationID = s
			case schema.EventsCausationID:
				r.CausationID = s
			}
		default:
			return r, false
		}
	}
	if r.StreamID == "" || r.ID == "" || r.Type == "" || !haveData || !haveRecordedAt || !haveVersion {
		return r, false
	}
	r.Data = []byte(data)
	if !json.Valid(r.Data) {
		return r, false
	}
	at, err := time.Parse(time.RFC3339Nano, recordedAt)
	if err != nil {
		return r, false
	}
	r.RecordedAt = at
	return r, true
}

func toItem(image map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, len(image))
	for name, v := range image {
		av, err := toAttributeValue(v)
		if err != nil {
			return nil, fmt.Errorf("%w: attribute %q: %v", eventstore.ErrCorruptRecord, name, err)
		}
		item[name] = av
	}
	return item, nil
}

// toAttributeValue converts a Lambda event attribute value to the SDK's. It switches
// on DataType before calling an accessor, because the accessors panic on any other
// type; the zero DynamoDBAttributeValue claims to be Binary but holds nothing, and
// is refused rather than dereferenced.
func toAttributeValue(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	if v.DataType() == events.DataTypeNull {
		return &types.AttributeValueMemberNULL{Value: true}, nil
	}
	if v.IsNull() {
		return nil, errors.New("no value")
	}
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		list := v.List()
		out := make([]types.AttributeValue, len(list))
		for i, e := range list {
			av, err := toAttributeValue(e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m := v.Map()
		out := make(map[string]types.AttributeValue, len(m))
		for k, e := range m {
			av, err := toAttributeValue(e)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	default:
		return nil, fmt.Errorf("unknown data type %d", v.DataType())
	}
}
