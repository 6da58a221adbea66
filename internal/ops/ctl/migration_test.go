package ctl_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/adapters/deadlinetable"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/ops/ctl"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
)

// TestRebuildFillsTheDeadlinesTableOfAStackDeployedBefore plays the migration of a
// stack deployed before the Deadlines table: an event store with rentals in every
// state, and a PendingPayments table holding, in the shape the code before wrote
// them, their rows (a payment due in "0", a process stuck in "open-1"), a
// cancellation owed and a stream record parked for redelivery (stamped below 0 in
// "open-N"). rentalctl rebuild -parked-from fills the empty Deadlines table: every
// deadline from the events, due by the configured durations; the parked record
// parked again, due when it was; nothing the events do not say (the old table's
// owed row, whose events this store does not hold); and the old table left as it
// was.
func TestRebuildFillsTheDeadlinesTableOfAStackDeployedBefore(t *testing.T) {
	ctx := context.Background()
	sw := newStampWorld(t) // an outstanding rental and an approved one, the configured durations
	w := sw.w
	rejected := w.Rent("migrate-rejected", rebuildtest.Rejected)
	cancelled := w.Rent("migrate-cancelled", rebuildtest.Cancelled)

	legacy := emulatortest.CreateTable(t, w.Client, schema.LegacyPendingPayments, "legacy")
	outstanding := sw.rentals[0]
	parkedStream := rentalpayment.StreamID(outstanding)
	parkedDue := time.Now().Add(-time.Minute).Truncate(time.Millisecond).UTC()
	item := func(key, shard string, stamp int64) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			schema.LegacyPendingKey:   &types.AttributeValueMemberS{Value: key},
			schema.LegacyPendingShard: &types.AttributeValueMemberS{Value: shard},
			schema.LegacyPendingStamp: &types.AttributeValueMemberN{Value: strconv.FormatInt(stamp, 10)},
			"rentalId":                &types.AttributeValueMemberS{Value: outstanding},
		}
	}
	before := []map[string]types.AttributeValue{
		item(payment.ReferenceFor(outstanding), "0", time.Now().Add(-time.Minute).UnixMilli()),
		item(rentalpayment.StreamID(outstanding), "open-1", time.Now().Add(-time.Minute).UnixMilli()),
		item(payment.StreamID(payment.ReferenceFor(rental.NewRentalID("gone", "AAAAAAAAAAAAAAAAAAAAAA"))), "open-0", -time.Now().Add(-time.Hour).UnixMilli()),
		item(deadlinetable.ParkedKey(eventfilter.Process, parkedStream, 1), "open-2", -parkedDue.UnixMilli()),
		{schema.LegacyPendingKey: &types.AttributeValueMemberS{Value: deadlinetable.ConfigKey}, "shards": &types.AttributeValueMemberN{Value: "4"}},
	}
	for _, it := range before {
		if _, err := w.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(legacy), Item: it}); err != nil {
			t.Fatal(err)
		}
	}

	table := emulatortest.CreateTable(t, w.Client, schema.Deadlines, "deadlines")
	getenv := sw.env(table, 4)
	stack, err := ctl.Open(ctx, getenv, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := stack.Rebuild(ctx, ctl.RebuildRequest{ParkedFrom: legacy, Trace: quietTrace{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ParkedCarried != 1 {
		t.Errorf("carried %d parked records, want the one", res.ParkedCarried)
	}
	sw.check(t, getenv) // the outstanding rental's payment and process, the approved one's return, each due as configured
	for _, id := range []string{rejected, cancelled} {
		for _, kind := range []string{deadlinekinds.Payment, deadlinekinds.Stuck, deadlinekinds.Return} {
			list, err := stack.Deadlines(ctx, kind, ctl.PendingQuery{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(list.Deadlines, func(d ctl.Deadline) bool { return d.RentalID == id }) {
				t.Errorf("%s: a %s row for a settled rental", id, kind)
			}
		}
	}
	parked, err := stack.Parked(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(parked.Parked) != 1 || parked.Parked[0].StreamID != parkedStream || parked.Parked[0].Consumer != eventfilter.Process ||
		parked.Parked[0].Version != 1 || !parked.Parked[0].Due.Equal(parkedDue) {
		t.Errorf("parked %+v, want %s's record for the process, due at %s", parked.Parked, parkedStream, parkedDue)
	}
	owed, err := stack.Cancellations(ctx)
	if err != nil || owed.Count != 0 {
		t.Errorf("owed cancellations %+v, %v; want none: no event owes one", owed, err)
	}
	out, err := w.Client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(legacy)}) // the test's own check of a table of five items
	if err != nil || len(out.Items) != len(before) {
		t.Errorf("the old table holds %d items (%v), want its %d untouched", len(out.Items), err, len(before))
	}
}
