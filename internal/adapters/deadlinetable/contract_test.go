package deadlinetable_test

import (
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestTheTableKeepsTheIndexContract runs the index contract against the
// Deadlines table on the emulator, through the real SDK.
func TestTheTableKeepsTheIndexContract(t *testing.T) {
	indextest.Run(t, func(t *testing.T) indextest.Subject {
		client := emulatortest.DynamoDB(t)
		table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
		p, err := deadlinetable.New(client, table, 4, deadlinetable.DefaultMarkerTTL)
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

// TestTheTableKeepsTheContractOfAnyKind runs the contract of any kind's rows, with
// kinds declared in the contract alone, against the table on the emulator.
func TestTheTableKeepsTheContractOfAnyKind(t *testing.T) {
	indextest.RunKinds(t, func(t *testing.T, kinds deadline.Kinds) indextest.KindSubject {
		client := emulatortest.DynamoDB(t)
		table := emulatortest.CreateTable(t, client, schema.Deadlines, "pending")
		p, err := deadlinetable.New(client, table, 4, deadlinetable.DefaultMarkerTTL)
		if err != nil {
			t.Fatal(err)
		}
		return p.WithKinds(kinds)
	})
}
