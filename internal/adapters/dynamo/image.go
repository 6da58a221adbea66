package dynamo

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// DecodeImage reads the new image of an Events table stream record, as Lambda
// delivers it, back into the record that was appended: the same decoder as
// DecodeRecord's, reading the image's attributes where they are, with no conversion
// to the SDK's form. An empty image, or one that DecodeRecord would refuse as an
// item, yields an error matching eventstore.ErrCorruptRecord. It does not panic,
// whatever the image holds: every attribute's type is checked before its accessor,
// which panics on any other.
func DecodeImage(image map[string]events.DynamoDBAttributeValue) (eventstore.Record, error) {
	if len(image) == 0 {
		return eventstore.Record{}, fmt.Errorf("%w: the stream record has no new image", eventstore.ErrCorruptRecord)
	}
	return decode(streamImage(image))
}

// streamImage is an item in a stream record's form.
type streamImage map[string]events.DynamoDBAttributeValue

// has returns the attribute and whether it holds a value of type t. The zero
// DynamoDBAttributeValue claims to be Binary but holds nothing; IsNull catches it.
func (im streamImage) has(name string, t events.DynamoDBDataType) (events.DynamoDBAttributeValue, bool, bool) {
	v, present := im[name]
	if !present {
		return v, false, false
	}
	return v, true, v.DataType() == t && !v.IsNull()
}

func (im streamImage) str(name string) (string, bool, bool) {
	v, present, ok := im.has(name, events.DataTypeString)
	if !ok {
		return "", present, false
	}
	return v.String(), true, true
}

func (im streamImage) num(name string) (string, bool, bool) {
	v, present, ok := im.has(name, events.DataTypeNumber)
	if !ok {
		return "", present, false
	}
	return v.Number(), true, true
}

func (im streamImage) strs(name string) ([]string, bool, bool) {
	v, present, ok := im.has(name, events.DataTypeList)
	if !ok {
		return nil, present, false
	}
	list := v.List()
	out := make([]string, 0, len(list))
	for _, e := range list {
		if e.DataType() != events.DataTypeString || e.IsNull() {
			return nil, true, false
		}
		out = append(out, e.String())
	}
	return out, true, true
}

// StreamRecord decodes one record of the Events table's stream as the deadlines
// module reads it (awslambda.Decoder): the INSERT of an event, its Source the
// event store's record; ok is false for every other operation (the table is
// append-only). A new image that does not decode is an error, with the record's
// stream set when its image names one, so that only that stream's later records
// wait behind it.
func StreamRecord(rec events.DynamoDBEventRecord) (deadlines.Record, bool, error) {
	if rec.EventName != string(events.DynamoDBOperationTypeInsert) {
		return deadlines.Record{}, false, nil
	}
	r, err := DecodeImage(rec.Change.NewImage)
	if err != nil {
		var stream deadlines.Record
		if s, ok := rec.Change.NewImage[schema.EventsStreamID]; ok && s.DataType() == events.DataTypeString && !s.IsNull() && s.String() != "" {
			stream.Stream = s.String()
		}
		return stream, false, err
	}
	return RecordOf(r), true, nil
}

// RecordOf is a record of the event store as the deadlines module reads it, its
// Source the record itself.
func RecordOf(r eventstore.Record) deadlines.Record {
	return deadlines.Record{Stream: r.StreamID, Position: r.Version, Type: r.Type, At: r.RecordedAt, Data: r.Data, Source: r}
}

// EventRecord is r as Lambda delivers its INSERT from the Events table's stream:
// its keys and its new image, as EncodeRecord writes it, with sequence as its
// sequence number. It is what StreamRecord reads back: for tests and tools that
// play the stream.
func EventRecord(r eventstore.Record, sequence string) events.DynamoDBEventRecord {
	image := StreamImage(EncodeRecord(r))
	return events.DynamoDBEventRecord{
		EventID: sequence, EventName: string(events.DynamoDBOperationTypeInsert), EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{
			Keys:     map[string]events.DynamoDBAttributeValue{schema.EventsStreamID: image[schema.EventsStreamID], schema.EventsVersion: image[schema.EventsVersion]},
			NewImage: image, SequenceNumber: sequence, StreamViewType: string(events.DynamoDBStreamViewTypeNewImage),
		},
	}
}

// StreamImage is an item of the table as a stream record carries it.
func StreamImage(item map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		out[k] = streamValue(v)
	}
	return out
}

func streamValue(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			list[i] = streamValue(e)
		}
		return events.NewListAttribute(list)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(StreamImage(v.Value))
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	}
	return events.NewNullAttribute()
}
