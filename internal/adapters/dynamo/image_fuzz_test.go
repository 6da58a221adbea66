package dynamo_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/eventstore"
)

func FuzzDecodeImage(f *testing.F) {
	for _, seed := range []string{
		// A NEW_IMAGE of an Events item, as in testdata/batch.json.
		`{"streamId":{"S":"bike-b1"},"version":{"N":"1"},"eventId":{"S":"0b6a1c1e-5f3a-4c62-9d1e-2f4a8c7e9b01"},` +
			`"type":{"S":"BikeRegistered"},"data":{"S":"{\"bikeId\":\"b1\"}"},"tags":{"L":[{"S":"bike:b1"}]},` +
			`"recordedAt":{"S":"2026-01-02T03:04:05.123456789Z"},"correlationId":{"S":"corr-1"},"causationId":{"S":"cmd-1"}}`,
		// The least an item may hold.
		`{"streamId":{"S":"payment-rp_b1_A"},"version":{"N":"9223372036854775807"},"eventId":{"S":"e"},"type":{"S":"T"},` +
			`"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05+02:00"}}`,
		// The version of the wrong type.
		`{"streamId":{"S":"bike-b2"},"version":{"S":"7"},"eventId":{"S":"e-7"},"type":{"S":"BikeReturned"},` +
			`"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05Z"}}`,
		// No version.
		`{"streamId":{"S":"bike-b2"},"eventId":{"S":"e-7"},"type":{"S":"BikeReturned"},` +
			`"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05Z"}}`,
		// Attributes of every type, nested.
		`{"streamId":{"S":"bike-b3"},"version":{"N":"2"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":"{}"},` +
			`"recordedAt":{"S":"2026-01-02T03:04:05Z"},"tags":{"L":[{"S":"a"},{"S":""}]},` +
			`"extra":{"M":{"b":{"B":"AQID"},"n":{"NS":["1","2"]},"s":{"SS":["a"]},"t":{"BOOL":false},` +
			`"l":{"L":[{"M":{"x":{"NULL":true},"y":{"BS":["AA=="]}}}]}}}}`,
		`{}`,
		`{"streamId":{"NULL":true}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var image map[string]events.DynamoDBAttributeValue
		if err := json.Unmarshal(data, &image); err != nil {
			t.Skip()
		}
		rec, err := dynamo.DecodeImage(image)
		if err != nil {
			if !errors.Is(err, eventstore.ErrCorruptRecord) {
				t.Fatalf("DecodeImage(%s) = %v, not an ErrCorruptRecord", data, err)
			}
			return
		}
		if rec.StreamID == "" || rec.Version < 1 {
			t.Fatalf("DecodeImage(%s) accepted a record without a stream id or a positive version: %+v", data, rec)
		}
		// What was decoded is what the store would write: encoding it again and
		// decoding that gives the same record.
		again, err := dynamo.DecodeRecord(dynamo.EncodeRecord(rec))
		if err != nil {
			t.Fatalf("the decoded record %+v does not survive encoding: %v", rec, err)
		}
		if !again.RecordedAt.Equal(rec.RecordedAt) {
			t.Fatalf("recordedAt %v came back as %v", rec.RecordedAt, again.RecordedAt)
		}
		again.RecordedAt = rec.RecordedAt
		if !reflect.DeepEqual(again, rec) {
			t.Fatalf("the decoded record %+v came back as %+v", rec, again)
		}
	})
}
