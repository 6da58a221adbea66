package main

import (
	"testing"

	"github.com/bikerental/bikerental/internal/app/rentalview"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
)

// TestSweepFlagsReturnsByTheRentalPeriod: rentalctl sweep finds a return due by
// RENTAL_PERIOD, and FlagOverdueReturn judges it by the same period, as the sweep
// function's does: the rental reads overdue.
func TestSweepFlagsReturnsByTheRentalPeriod(t *testing.T) {
	w := rebuildtest.NewWorld(t)
	id := w.Rent("bike1", rebuildtest.Confirmed)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	e["RENTAL_PERIOD"] = "1ms"
	must(t, e, "rebuild")
	sum := decode[ctl.Summary](t, must(t, e, "sweep", "--json"))
	ks, _ := sum.Kind("return")
	v := decode[rentalview.View](t, must(t, e, "history", "--json", id))
	if ks.Found != 1 || ks.Acted != 1 || v.Status != rentalview.StatusOverdue {
		t.Errorf("rentalctl sweep with RENTAL_PERIOD=1ms found %d returns due, flagged %d (declined %d); status %s, want overdue", ks.Found, ks.Acted, ks.Declined, v.Status)
	}
}
