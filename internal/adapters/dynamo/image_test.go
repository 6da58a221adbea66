package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/streampoll/streampolltest"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// sample decodes a Lambda DynamoDB stream event from testdata.
func imageSample(t *testing.T, name string) events.DynamoDBEvent {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

func TestDecodeImageReadsWhatTheStoreWrote(t *testing.T) {
	f := streampolltest.NewFixture(t)
	bare := streampolltest.Event("Bare")
	bare.Tags, bare.CorrelationID, bare.CausationID, bare.RecordedAt = nil, "", "", time.Time{}
	f.Append(t, "bike-1", 0, streampolltest.Event("BikeRegistered"))
	f.Append(t, "bike-1", 1, streampolltest.Event("BikeRequested"), streampolltest.Event("RequestApproved"), bare)
	f.Append(t, "payment-1", 0, streampolltest.Event("PaymentPrepared"), streampolltest.Event("PaymentConfirmed"))
	f.Append(t, "bike-1", 4, streampolltest.Event("BikeReturned"))

	r := &streampolltest.Recorder{}
	streampolltest.Drain(t, f.Poller(r, 3), 10)
	got := map[string][]eventstore.Record{}
	for _, b := range r.Batches {
		for _, rec := range streampolltest.Decoded(t, b) {
			got[rec.StreamID] = append(got[rec.StreamID], rec)
		}
	}
	for _, streamID := range []string{"bike-1", "payment-1"} {
		want, err := f.Store.Read(context.Background(), streamID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[streamID], want) {
			t.Errorf("stream %s through the stream:\n%+v\nread from the store:\n%+v", streamID, got[streamID], want)
		}
	}
}

func TestDecodeImageOfASample(t *testing.T) {
	ev := imageSample(t, "batch.json")
	got, err := dynamo.DecodeImage(ev.Records[0].Change.NewImage)
	if err != nil {
		t.Fatal(err)
	}
	want := eventstore.Record{
		StreamID: "bike-b1",
		Version:  1,
		Event: eventstore.Event{
			ID:            "0b6a1c1e-5f3a-4c62-9d1e-2f4a8c7e9b01",
			Type:          "BikeRegistered",
			Data:          json.RawMessage(`{"bikeId":"b1","secret":"PAYLOAD-1"}`),
			Tags:          []string{"bike:b1"},
			RecordedAt:    time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
			CorrelationID: "corr-1",
			CausationID:   "cmd-1",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestDecodeImageRejectsCorruptImages(t *testing.T) {
	for _, rec := range imageSample(t, "corrupt.json").Records {
		t.Run(rec.EventID, func(t *testing.T) {
			r, err := dynamo.DecodeImage(rec.Change.NewImage)
			if !errors.Is(err, eventstore.ErrCorruptRecord) {
				t.Errorf("got %+v, %v; want an error matching ErrCorruptRecord", r, err)
			}
		})
	}
}

// TestAnAttributeWithoutAValueIsCorruptNotAPanic: an image whose attribute holds
// nothing (the zero DynamoDBAttributeValue, whose accessors panic) or a NULL, in
// every attribute the decoder reads, is refused as corrupt.
func TestAnAttributeWithoutAValueIsCorruptNotAPanic(t *testing.T) {
	valid := func() map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{
			"streamId": events.NewStringAttribute("bike-b1"), "version": events.NewNumberAttribute("1"),
			"eventId": events.NewStringAttribute("e"), "type": events.NewStringAttribute("T"),
			"data": events.NewStringAttribute("{}"), "recordedAt": events.NewStringAttribute("2026-01-02T03:04:05Z"),
			"tags":          events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("a")}),
			"correlationId": events.NewStringAttribute("c"), "causationId": events.NewStringAttribute("k"),
		}
	}
	if _, err := dynamo.DecodeImage(valid()); err != nil {
		t.Fatalf("the valid image: %v", err)
	}
	for name := range valid() {
		for what, v := range map[string]events.DynamoDBAttributeValue{"no value": {}, "NULL": events.NewNullAttribute()} {
			image := valid()
			image[name] = v
			if _, err := dynamo.DecodeImage(image); !errors.Is(err, eventstore.ErrCorruptRecord) {
				t.Errorf("%s %s: %v, want ErrCorruptRecord", name, what, err)
			}
		}
		image := valid()
		image["tags"] = events.NewListAttribute([]events.DynamoDBAttributeValue{{}})
		if _, err := dynamo.DecodeImage(image); !errors.Is(err, eventstore.ErrCorruptRecord) {
			t.Errorf("a tag without a value: %v, want ErrCorruptRecord", err)
		}
	}
}
