package deadline_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestTheProjectorActsOnExactlyTheTypesItIsWokenFor ties the projector's stream
// filter to the code: it reads every type it is woken for (refusing a corrupt one)
// and ignores every other, writing nothing.
func TestTheProjectorActsOnExactlyTheTypesItIsWokenFor(t *testing.T) {
	w := newWorld(t, 2)
	for _, typ := range eventfilter.EventTypes() {
		r := eventstore.Record{StreamID: "s", Version: 1, Event: eventstore.Event{ID: "e-" + typ, Type: typ, Data: []byte(`not json`)}}
		err := w.projection.Apply(ctx, r)
		if eventfilter.Wakes(eventfilter.Projector, typ) {
			if !errors.Is(err, eventstore.ErrCorruptRecord) {
				t.Errorf("%s: the projector is woken for it but did not read it (%v)", typ, err)
			}
		} else if err != nil {
			t.Errorf("%s: the projector is not woken for it but acted on it: %v", typ, err)
		}
	}
	out, err := w.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(w.pending)})
	if err != nil || len(out.Items) != 0 {
		t.Errorf("records the projector ignores wrote %d rows (%v)", len(out.Items), err)
	}
}
