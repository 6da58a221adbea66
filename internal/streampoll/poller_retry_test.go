package streampoll_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/bikerental/bikerental/internal/streampoll"
	"github.com/bikerental/bikerental/internal/streampoll/streampolltest"
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
