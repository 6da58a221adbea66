package streampoll_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/dev/streampoll/streampolltest"
)

// TestPoisonRecordGoesToTheOnFailureDestination plays a mapping with
// MaximumRetryAttempts 2: the record that always fails is delivered three times, then
// handed to OnFailure and skipped; the records after it are still delivered.
func TestPoisonRecordGoesToTheOnFailureDestination(t *testing.T) {
	f := streampolltest.NewFixture(t)
	recs := f.Append(t, "s", 0, streampolltest.Event("A"), streampolltest.Event("Poison"), streampolltest.Event("C"))
	poison := streampolltest.Key(recs[1])
	attempts := 0
	var poisonSeq string
	var delivered []string
	r := &streampolltest.Recorder{Respond: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, rec := range streampolltest.Decoded(t, ev) {
			if streampolltest.Key(rec) == poison {
				attempts++
				poisonSeq = ev.Records[0].Change.SequenceNumber
				return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
			}
			delivered = append(delivered, streampolltest.Key(rec))
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	var given []streampoll.FailedRecord
	p := f.Poller(r, 1) // one record a batch, so the failing one is always first
	p.MaxRetryAttempts = 2
	p.OnFailure = func(_ context.Context, fr streampoll.FailedRecord) { given = append(given, fr) }
	streampolltest.Drain(t, p, 20)
	if attempts != 3 {
		t.Errorf("the poison record was delivered %d times, want 3 (first try and 2 retries)", attempts)
	}
	// As Lambda's on-failure message: where the record is, never what it holds.
	if len(given) != 1 || given[0].Attempts != 3 || given[0].StartSequenceNumber != poisonSeq || given[0].EndSequenceNumber != poisonSeq ||
		given[0].BatchSize != 1 || given[0].ShardID == "" || given[0].StreamARN != f.ARN {
		t.Fatalf("on-failure destination got %+v, want the poison record's place (%s) once", given, poisonSeq)
	}
	if len(delivered) != 2 || delivered[0] != streampolltest.Key(recs[0]) || delivered[1] != streampolltest.Key(recs[2]) {
		t.Errorf("delivered %v, want the records around the poison one", delivered)
	}
}

// TestAgeBoundRetriesOutlastACountBudget plays the mappings' retry budget
// (MaximumRetryAttempts -1, MaximumRecordAgeInSeconds): a record that fails more
// often than a count budget of 20 would allow, and then succeeds (a settlement
// whose process start lands late), is delivered and never dead-lettered.
func TestAgeBoundRetriesOutlastACountBudget(t *testing.T) {
	f := streampolltest.NewFixture(t)
	f.Append(t, "s", 0, streampolltest.Event("Early"))
	attempts := 0
	r := &streampolltest.Recorder{Respond: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		attempts++
		if attempts <= 30 {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
		}
		return events.DynamoDBEventResponse{}, nil
	}}
	var given []streampoll.FailedRecord
	p := f.Poller(r, 1)
	p.MaxRecordAge = time.Hour
	p.OnFailure = func(_ context.Context, fr streampoll.FailedRecord) { given = append(given, fr) }
	deadline := time.Now().Add(10 * time.Second)
	for attempts <= 30 && time.Now().Before(deadline) {
		if _, err := p.Poll(context.Background()); err != nil {
			t.Fatalf("poll: %v", err)
		}
	}
	if attempts != 31 || len(given) != 0 {
		t.Fatalf("delivered %d times, dead-lettered %v; want 31 deliveries (30 failures, then success) and nothing dead-lettered", attempts, given)
	}
}

// TestAgeBoundRetriesGiveUpOnceTheRecordIsTooOld: with only MaxRecordAge set, a
// record that always fails is retried until it is older than that, then handed to
// the on-failure destination.
func TestAgeBoundRetriesGiveUpOnceTheRecordIsTooOld(t *testing.T) {
	f := streampolltest.NewFixture(t)
	f.Append(t, "s", 0, streampolltest.Event("Poison"))
	attempts := 0
	r := &streampolltest.Recorder{Respond: func(_ int, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		attempts++
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[0].Change.SequenceNumber}}}, nil
	}}
	const maxAge = 1500 * time.Millisecond
	var given []streampoll.FailedRecord
	var givenAt time.Time
	p := f.Poller(r, 1)
	p.MaxRecordAge = maxAge
	p.OnFailure = func(_ context.Context, fr streampoll.FailedRecord) { given, givenAt = append(given, fr), time.Now() }
	deadline := time.Now().Add(15 * time.Second)
	for len(given) == 0 && time.Now().Before(deadline) {
		if _, err := p.Poll(context.Background()); err != nil {
			t.Fatalf("poll: %v", err)
		}
	}
	if len(given) != 1 {
		t.Fatalf("the failing record was not given up on within 15s (%d deliveries)", attempts)
	}
	if age := givenAt.Sub(given[0].ApproximateArrivalOfFirstRecord); age <= maxAge {
		t.Errorf("given up on at age %v, before the maximum record age %v", age, maxAge)
	}
	if given[0].Attempts != attempts || attempts < 2 {
		t.Errorf("given up on after %d deliveries (recorded %d), want several", attempts, given[0].Attempts)
	}
}
