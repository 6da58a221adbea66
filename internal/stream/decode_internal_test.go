package stream

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/eventstore/dynamo"
)

// samples returns the new images of the stream events in testdata.
func samples(t testing.TB, name string) map[string]map[string]events.DynamoDBAttributeValue {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]events.DynamoDBAttributeValue{}
	for _, rec := range ev.Records {
		out[rec.EventID] = rec.Change.NewImage
	}
	return out
}

// agree fails the test unless decodeEventsItem, when it decodes image, decodes it
// exactly as the general path does: converted to the SDK's form, then read by
// dynamo.DecodeRecord. It reports whether the direct path decoded it.
func agree(t testing.TB, image map[string]events.DynamoDBAttributeValue) bool {
	t.Helper()
	got, ok := decodeEventsItem(image)
	if !ok {
		return false
	}
	item, err := toItem(image)
	if err != nil {
		t.Fatalf("decodeEventsItem accepted %v, which does not convert: %v", image, err)
	}
	want, err := dynamo.DecodeRecord(item)
	if err != nil {
		t.Fatalf("decodeEventsItem accepted %v, which DecodeRecord refuses: %v", image, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeEventsItem = %+v, DecodeRecord = %+v", got, want)
	}
	return true
}

func TestDirectDecodingAgreesWithConversion(t *testing.T) {
	for id, image := range samples(t, "batch.json") {
		if ok := agree(t, image); ok != (image != nil) {
			t.Errorf("%s: decoded directly %v, want %v", id, ok, image != nil)
		}
	}
	for id, image := range samples(t, "corrupt.json") {
		if agree(t, image) {
			t.Errorf("%s: a corrupt image was decoded directly", id)
		}
	}
	extra := samples(t, "batch.json")
	for _, image := range extra {
		if image != nil {
			image["extra"] = events.NewStringAttribute("x")
			if agree(t, image) {
				t.Errorf("an image with an attribute the table does not define was decoded directly")
			}
			delete(image, "extra")
			image["tags"] = events.NewListAttribute(nil)
			if !agree(t, image) {
				t.Errorf("an image with an empty tag list was not decoded directly")
			}
			break
		}
	}
}

// FuzzDirectDecoding looks for an image that decodeEventsItem decodes otherwise
// than the general path. Its seeds run with every go test.
func FuzzDirectDecoding(f *testing.F) {
	for _, seed := range []string{
		`{"streamId":{"S":"bike-b1"},"version":{"N":"1"},"eventId":{"S":"e1"},"type":{"S":"BikeRegistered"},` +
			`"data":{"S":"{\"bikeId\":\"b1\"}"},"tags":{"L":[{"S":"bike:b1"},{"S":"rental:r1"}]},` +
			`"recordedAt":{"S":"2026-01-02T03:04:05.123456789Z"},"correlationId":{"S":"corr-1"},"causationId":{"S":"cmd-1"}}`,
		`{"streamId":{"S":"s"},"version":{"N":"9223372036854775807"},"eventId":{"S":"e"},"type":{"S":"T"},` +
			`"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05+02:00"},"correlationId":{"S":""}}`,
		`{"streamId":{"S":"s"},"version":{"N":"+7"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":" 1 "},"recordedAt":{"S":"2026-01-02T03:04:05Z"}}`,
		`{"streamId":{"S":"s"},"version":{"N":"07"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05Z"},"tags":{"L":[]}}`,
		`{"streamId":{"S":"s"},"version":{"N":"1"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05Z"},"tags":{"L":[{"NULL":true}]}}`,
		`{"streamId":{"S":"s"},"version":{"S":"1"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05Z"}}`,
		`{"streamId":{"S":""},"version":{"N":"1"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05Z"}}`,
		`{"streamId":{"S":"s"},"version":{"N":"1"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":""},"recordedAt":{"S":"2026-01-02T03:04:05Z"}}`,
		`{"streamId":{"S":"s"},"version":{"N":"1"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":"{}"},"recordedAt":{"S":"yesterday"}}`,
		`{"streamId":{"S":"s"},"version":{"N":"1"},"eventId":{"S":"e"},"type":{"S":"T"},"data":{"S":"{}"},"recordedAt":{"S":"2026-01-02T03:04:05Z"},"causationId":{"NULL":true}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var image map[string]events.DynamoDBAttributeValue
		if err := json.Unmarshal(data, &image); err != nil {
			t.Skip()
		}
		agree(t, image)
	})
}
