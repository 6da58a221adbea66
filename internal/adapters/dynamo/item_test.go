package dynamo_test

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestRecordSizeIsTheEncodedItemsSize checks that RecordSize, which counts without
// encoding, gives the size of the item EncodeRecord makes, whatever the record holds.
func TestRecordSizeIsTheEncodedItemsSize(t *testing.T) {
	full := eventstore.Record{StreamID: "bike-b1", Version: 12, Event: eventstore.Event{
		ID: "0b6a1c1e-5f3a-4c62-9d1e-2f4a8c7e9b01", Type: "BikeRequested", Data: json.RawMessage(`{"bikeId":"b1","é":"ü"}`),
		Tags: []string{"bike:b1", "rental:b1_AAAAAAAAAAAAAAAAAAAAAA"}, RecordedAt: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		CorrelationID: "b1_AAAAAAAAAAAAAAAAAAAAAA", CausationID: "request:r-1",
	}}
	bare := eventstore.Record{StreamID: "s", Version: 1, Event: eventstore.Event{ID: "e", Type: "T", Data: json.RawMessage(`{}`)}}
	cases := map[string]eventstore.Record{"every field": full, "the fewest fields": bare}
	for name, mutate := range map[string]func(*eventstore.Record){
		"a version of every length":     func(r *eventstore.Record) { r.Version = math.MaxInt64 },
		"a version of 10 digits":        func(r *eventstore.Record) { r.Version = 1234567890 },
		"a version with trailing zeros": func(r *eventstore.Record) { r.Version = 1_000_000 },
		"a time in another zone": func(r *eventstore.Record) {
			r.RecordedAt = time.Date(2026, 6, 1, 0, 0, 0, 5000, time.FixedZone("x", 3600))
		},
		"a time on a whole second":   func(r *eventstore.Record) { r.RecordedAt = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) },
		"an empty tag list":          func(r *eventstore.Record) { r.Tags = []string{} },
		"an empty tag":               func(r *eventstore.Record) { r.Tags = []string{""} },
		"a large payload":            func(r *eventstore.Record) { r.Data = json.RawMessage(`"` + strings.Repeat("x", 300_000) + `"`) },
		"only a correlation id":      func(r *eventstore.Record) { r.CausationID = "" },
		"only a causation id":        func(r *eventstore.Record) { r.CorrelationID = "" },
		"a year past 9999 (unusual)": func(r *eventstore.Record) { r.RecordedAt = time.Date(12026, 1, 1, 0, 0, 0, 0, time.UTC) },
	} {
		r := full
		mutate(&r)
		cases[name] = r
	}
	for name, r := range cases {
		// capacity.ItemSize counts a number's significant digits only; RecordSize
		// counts the version's trailing zeros too, at most 9 bytes more for an int64.
		got, exact := dynamo.RecordSize(r), capacity.ItemSize(dynamo.EncodeRecord(r))
		over := (len(strconv.FormatInt(r.Version, 10))+1)/2 + 1 - capacity.NumberSize(strconv.FormatInt(r.Version, 10))
		if got != exact+over {
			t.Errorf("%s: RecordSize = %d, the encoded item's size is %d (+%d for the version's trailing zeros)", name, got, exact, over)
		}
	}
}

// TestDecodeRecordRefusesEmptyIdsAndDataThatIsNotJSON checks each of DecodeRecord's
// refusals of a stored item that has every attribute with the right type but holds
// an empty stream id, event id or type, or data that is not JSON: each one alone is
// refused as corrupt, and the item it was made from is not.
func TestDecodeRecordRefusesEmptyIdsAndDataThatIsNotJSON(t *testing.T) {
	valid := eventstore.Record{StreamID: "bike-b1", Version: 1, Event: eventstore.Event{
		ID: "e-1", Type: "BikeRegistered", Data: json.RawMessage(`{"bikeId":"b1"}`),
		RecordedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}}
	if _, err := dynamo.DecodeRecord(dynamo.EncodeRecord(valid)); err != nil {
		t.Fatalf("the valid item is refused: %v", err)
	}
	for name, mutate := range map[string]func(*eventstore.Record){
		"an empty stream id":    func(r *eventstore.Record) { r.StreamID = "" },
		"an empty event id":     func(r *eventstore.Record) { r.ID = "" },
		"an empty type":         func(r *eventstore.Record) { r.Type = "" },
		"empty data":            func(r *eventstore.Record) { r.Data = json.RawMessage(``) },
		"data that is not JSON": func(r *eventstore.Record) { r.Data = json.RawMessage(`{"bikeId":`) },
	} {
		r := valid
		mutate(&r)
		got, err := dynamo.DecodeRecord(dynamo.EncodeRecord(r))
		if !errors.Is(err, eventstore.ErrCorruptRecord) {
			t.Errorf("%s: DecodeRecord = %+v, %v; want an error matching ErrCorruptRecord", name, got, err)
		}
	}
}
