package dynamo

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"

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
