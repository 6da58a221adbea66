package eventstore_test

import (
	"testing"

	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/eventstore/eventstoretest"
)

func newMemory(testing.TB) eventstore.Store { return eventstore.NewMemory() }

func TestMemoryContract(t *testing.T) {
	eventstoretest.RequireEveryCapability(t, newMemory(t))
	eventstoretest.Run(t, newMemory)
}

func BenchmarkMemory(b *testing.B) { eventstoretest.Bench(b, newMemory) }
