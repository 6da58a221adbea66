package eventstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/eventstore"
)

type opened struct{ ID string }
type closed struct{ ID string }

func decodeSample(eventType string, data []byte) (any, error) {
	switch eventType {
	case "Opened":
		var e opened
		return e, json.Unmarshal(data, &e)
	case "Closed":
		var e closed
		return e, json.Unmarshal(data, &e)
	}
	return nil, fmt.Errorf("unknown event type %q", eventType)
}

func TestDecodeReadsTheStructItsTypeNames(t *testing.T) {
	r := eventstore.Record{StreamID: "s-1", Version: 3, Event: eventstore.Event{Type: "Opened", Data: []byte(`{"ID":"a"}`)}}
	got, err := eventstore.Decode[opened](r, decodeSample)
	if err != nil || got.ID != "a" {
		t.Fatalf("Decode = %+v, %v; want {a}", got, err)
	}
	for name, c := range map[string]struct {
		r    eventstore.Record
		want string
	}{
		"bad JSON":     {eventstore.Record{StreamID: "s-1", Version: 3, Event: eventstore.Event{Type: "Opened", Data: []byte(`{`)}}, `stream "s-1" version 3`},
		"unknown type": {eventstore.Record{StreamID: "s-2", Version: 1, Event: eventstore.Event{Type: "Gone", Data: []byte(`{}`)}}, `stream "s-2" version 1: unknown event type "Gone"`},
		"other struct": {eventstore.Record{StreamID: "s-3", Version: 2, Event: eventstore.Event{Type: "Closed", Data: []byte(`{}`)}}, `stream "s-3" version 2: a Closed is not a eventstore_test.opened`},
	} {
		_, err := eventstore.Decode[opened](c.r, decodeSample)
		if !errors.Is(err, eventstore.ErrCorruptRecord) || !contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrCorruptRecord naming %s", name, err, c.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
