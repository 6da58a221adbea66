package eventstoretest

import (
	"fmt"
	"testing"

	"github.com/bikerental/bikerental/internal/eventstore"
)

// payload is the size of a typical event of this service (a BikeRequested).
const payload = `{"bikeId":"bike-0042","renter":"renter-7f3a9c","rentalId":"01JD6Y4K3M8Q2W5E7R9T1Y3U5I"}`

// Bench runs the store benchmarks against the stores newStore makes.
func Bench(b *testing.B, newStore NewStore) {
	b.Run("Append1", func(b *testing.B) {
		s := newStore(b)
		b.ReportAllocs()
		v := int64(0)
		for b.Loop() {
			if _, err := s.Append(ctx, "bench", v, Event("ItemRequested", payload)); err != nil {
				b.Fatal(err)
			}
			v++
		}
	})
	b.Run("Append10", func(b *testing.B) {
		s := newStore(b)
		b.ReportAllocs()
		v := int64(0)
		events := make([]eventstore.Event, 10)
		for b.Loop() {
			for i := range events {
				events[i] = Event("ItemRequested", payload)
			}
			if _, err := s.Append(ctx, "bench", v, events...); err != nil {
				b.Fatal(err)
			}
			v += 10
		}
	})
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("Read%d", n), func(b *testing.B) {
			s := newStore(b)
			for v := int64(0); v < int64(n); v += 10 {
				events := make([]eventstore.Event, 10)
				for i := range events {
					events[i] = Event("ItemRequested", payload)
				}
				if _, err := s.Append(ctx, "bench", v, events...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				recs, err := s.Read(ctx, "bench", 0)
				if err != nil || len(recs) != n {
					b.Fatalf("read %d records, err %v", len(recs), err)
				}
			}
		})
	}
}
