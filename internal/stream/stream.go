// Package stream turns DynamoDB Streams records of the Events table into event
// records and runs batches of them through a handler the way Lambda's event source
// mapping expects. For local runs and tests, Poller reads a table's stream itself and
// plays the part of the event source mapping.
package stream

import (
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
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
	item, err := toItem(image)
	if err != nil {
		return eventstore.Record{}, err
	}
	return dynamo.DecodeRecord(item)
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
