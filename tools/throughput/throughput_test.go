package throughput_test

import (
	"context"
	"testing"
	"time"

	"github.com/bikerental/bikerental/tools/throughput"
)

// TestRunDeliversEveryRentalsRecords checks that a measurement counts what a
// shard's consumers get of a rental's start: its request for the process, the
// request and the prepared payment for the projector, every one handled.
func TestRunDeliversEveryRentalsRecords(t *testing.T) {
	res, err := throughput.Run(context.Background(), throughput.Config{
		Rentals: 30, BatchSize: 7, Concurrency: 4, Parallelization: 3, Timeout: time.Minute,
		StoreLatency: time.Millisecond, ProviderLatency: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ProcessRecords != 30 || res.ProjectorRecords != 60 {
		t.Errorf("process %d records, projector %d; want 30 and 60", res.ProcessRecords, res.ProjectorRecords)
	}
	if res.ProcessRate() <= 0 || res.ProjectorRate() <= 0 {
		t.Errorf("rates %v, %v", res.ProcessRate(), res.ProjectorRate())
	}
	if _, err := throughput.Run(context.Background(), throughput.Config{Rentals: 1}); err == nil {
		t.Error("an incomplete config was measured")
	}
}

// TestRunFailsWhenRecordsFail checks that a measurement whose records fail is an
// error, not a rate: here each batch's deadline is too near for any record to start.
func TestRunFailsWhenRecordsFail(t *testing.T) {
	_, err := throughput.Run(context.Background(), throughput.Config{
		Rentals: 2, BatchSize: 2, Concurrency: 2, Parallelization: 1, Timeout: time.Second,
		ProviderLatency: time.Hour,
	})
	if err == nil {
		t.Error("records that failed were measured")
	}
}
