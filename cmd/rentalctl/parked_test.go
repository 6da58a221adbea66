package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/app/parked"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/ops/ctl"
)

// TestParkedListsWhatTheSweepRedelivers parks a bike's request for the projector,
// as its stream function does with a record it cannot handle, lists it (text and
// JSON) once its parking stream's record reached the projection, lets a sweep
// deliver it again, and lists nothing once that reached the projection too.
func TestParkedListsWhatTheSweepRedelivers(t *testing.T) {
	w, _ := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	if r := must(t, e, "parked"); r.stdout != "CONSUMER  STREAM  VERSION  DUE\n0 parked stream records\n" {
		t.Errorf("parked of a world with none:\n%q", r.stdout)
	}
	ctx := context.Background()
	recs, err := w.Store.Read(ctx, rental.StreamID("bike1"), 0)
	if err != nil || len(recs) < 2 {
		t.Fatalf("bike1's stream: %d records, %v", len(recs), err)
	}
	requested := recs[1]
	parker := &parked.Parker{Store: w.Store, Consumer: eventfilter.Projector, NewID: ident.UUID, Known: eventfilter.Known}
	if err := parker.Park(ctx, requested); err != nil {
		t.Fatal(err)
	}
	// The projector takes the parking stream's records, as its stream consumer
	// would.
	project := func() {
		w.Project(w.Projection(2), w.Read(parked.StreamOf(eventfilter.Projector, requested.StreamID))...)
	}
	project()
	r := must(t, e, "parked")
	if !strings.Contains(r.stdout, "projector  "+requested.StreamID+"  2") || !strings.HasSuffix(r.stdout, "1 parked stream record\n") {
		t.Errorf("parked:\n%s", r.stdout)
	}
	list := decode[ctl.ParkedList](t, must(t, e, "parked", "--json"))
	if list.Count != 1 || list.Parked[0].Consumer != eventfilter.Projector || list.Parked[0].StreamID != requested.StreamID || list.Parked[0].Version != requested.Version {
		t.Errorf("parked --json: %+v", list)
	}

	sweep := rentalctl(e, "sweep")
	if !strings.Contains(sweep.stdout, "found 1 parked stream record: 1 redelivered, 0 still parked\n") {
		t.Errorf("sweep (%v):\n%s\n%s", sweep.err, sweep.stdout, sweep.stderr)
	}
	if list := decode[ctl.ParkedList](t, must(t, e, "parked", "--json")); list.Count != 1 {
		t.Errorf("parked after the sweep, before the projector took its redelivery: %+v, want it still listed", list)
	}
	project()
	if list := decode[ctl.ParkedList](t, must(t, e, "parked", "--json")); list.Count != 0 {
		t.Errorf("parked after the sweep: %+v", list)
	}
}
