package awslambda_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/awslambda"
)

// orderItems is the layout of the tests' events table.
var orderItems = awslambda.Items{Stream: "stream", Position: "position", Type: "type", At: "at", Data: "data"}

func TestItemsRefusesADescriptionThatNamesAPartNoneOrTwice(t *testing.T) {
	for _, c := range []struct {
		items awslambda.Items
		want  []string
	}{
		{awslambda.Items{}, []string{"Stream: no attribute", "Position: no attribute", "Type: no attribute", "At: no attribute"}},
		{awslambda.Items{Stream: "id", Position: "seq", Type: "id", At: "at"}, []string{`Type: attribute "id" is Stream's too`}},
		{awslambda.Items{Stream: "id", Position: "seq", Type: "type", At: "at", Data: "seq"}, []string{`Data: attribute "seq" is Position's too`}},
	} {
		dec, err := c.items.Decoder()
		if err == nil || dec != nil {
			t.Errorf("%+v: %v, want an error and no decoder", c.items, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %q does not say %q", c.items, err, w)
			}
		}
	}
	if _, err := (awslambda.Items{Stream: "id", Position: "seq", Type: "type", At: "at"}).Decoder(); err != nil {
		t.Errorf("a description without Data: %v", err)
	}
}

func TestItemsDecodesEachInsertOfAnEventAndNothingElse(t *testing.T) {
	decode, err := orderItems.Decoder()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 9, 0, 0, 123_000_000, time.UTC)
	image := func(change func(map[string]events.DynamoDBAttributeValue)) events.DynamoDBEventRecord {
		rec := insert(deadlines.Record{Stream: "order-7", Position: 3, Type: "OrderPlaced", At: at, Data: []byte(`{"total":12}`)}, 1)
		if change != nil {
			change(rec.Change.NewImage)
		}
		return rec
	}
	want := deadlines.Record{Stream: "order-7", Position: 3, Type: "OrderPlaced", At: at, Data: []byte(`{"total":12}`)}
	for _, c := range []struct {
		name   string
		rec    events.DynamoDBEventRecord
		want   deadlines.Record
		ok     bool
		errSay string // empty: no error; else only the record's stream is compared
	}{
		{"an insert", image(nil), want, true, ""},
		{"a time in milliseconds", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["at"] = events.NewNumberAttribute("1772355600123")
		}), want, true, ""},
		{"a binary body", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["data"] = events.NewBinaryAttribute([]byte(`{"total":12}`))
		}), want, true, ""},
		{"no body", image(func(m map[string]events.DynamoDBAttributeValue) { delete(m, "data") }),
			deadlines.Record{Stream: "order-7", Position: 3, Type: "OrderPlaced", At: at}, true, ""},
		{"a modify", func() events.DynamoDBEventRecord {
			r := image(nil)
			r.EventName = string(events.DynamoDBOperationTypeModify)
			return r
		}(), deadlines.Record{}, false, ""},
		{"a remove", func() events.DynamoDBEventRecord {
			r := image(nil)
			r.EventName, r.Change.NewImage = string(events.DynamoDBOperationTypeRemove), nil
			return r
		}(), deadlines.Record{}, false, ""},
		{"an item that is no event", image(func(m map[string]events.DynamoDBAttributeValue) { delete(m, "type") }), deadlines.Record{}, false, ""},
		{"no stream", image(func(m map[string]events.DynamoDBAttributeValue) { delete(m, "stream") }), deadlines.Record{}, false, "stream: want a non-empty string"},
		{"a position as a string", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["position"] = events.NewStringAttribute("3")
		}), deadlines.Record{Stream: "order-7"}, false, "position: want a number"},
		{"a position of 0", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["position"] = events.NewNumberAttribute("0")
		}), deadlines.Record{Stream: "order-7"}, false, "want a whole number from 1"},
		{"a fractional position", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["position"] = events.NewNumberAttribute("2.5")
		}), deadlines.Record{Stream: "order-7"}, false, "want a whole number from 1"},
		{"a time not in RFC 3339", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["at"] = events.NewStringAttribute("1 March 2026")
		}), deadlines.Record{Stream: "order-7"}, false, "want a time in RFC 3339"},
		{"no time", image(func(m map[string]events.DynamoDBAttributeValue) { delete(m, "at") }),
			deadlines.Record{Stream: "order-7"}, false, "at: want a string in RFC 3339 or a number"},
		{"a type that is not a string", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["type"] = events.NewNumberAttribute("1")
		}), deadlines.Record{Stream: "order-7"}, false, "type: want a non-empty string"},
		{"a body of another type", image(func(m map[string]events.DynamoDBAttributeValue) {
			m["data"] = events.NewBooleanAttribute(true)
		}), deadlines.Record{Stream: "order-7"}, false, "data: want a string or binary body"},
	} {
		got, ok, err := decode(c.rec)
		if c.errSay == "" && err != nil || c.errSay != "" && (!errors.Is(err, deadlines.ErrCorruptRecord) || !strings.Contains(err.Error(), c.errSay)) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.errSay)
		}
		if c.errSay != "" { // what could be read: the stream, which the batch holds back
			if ok || got.Stream != c.want.Stream {
				t.Errorf("%s: %+v %v, want stream %q and not ok", c.name, got, ok, c.want.Stream)
			}
			continue
		}
		if ok != c.ok || got.Stream != c.want.Stream || got.Position != c.want.Position || got.Type != c.want.Type ||
			!got.At.Equal(c.want.At) || string(got.Data) != string(c.want.Data) {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
