// Package parked keeps the stream records a consumer could not handle when they
// came, for delivery again (docs/decisions/0017-parked-stream-records.md,
// docs/decisions/0036-deadlines-a-module-of-its-own.md): parking a record appends
// StreamRecordParked to a parking stream of the Events table of its own (one per
// consumer and parked record's stream), so that the record's position in the
// Events table's stream can move on and the records behind it are not held up;
// delivering it again appends StreamRecordRedelivered there. The redelivery kind
// of deadline (deadlinekinds.RedeliveryKind) projects the two into a row due at
// once, which the sweep sends to Redeliver until it settles. Records of a parking
// stream are never parked themselves: they fail, and Lambda delivers them again.
package parked

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/eventstore"
)

// StreamRecordParked records that a consumer could not handle one record of a
// stream when it came: it is kept for delivery again.
type StreamRecordParked struct {
	Consumer string `json:"consumer"`
	StreamID string `json:"streamId"`
	Version  int64  `json:"version"`
}

// EventType implements the service's event contract.
func (StreamRecordParked) EventType() string { return "StreamRecordParked" }

// StreamRecordRedelivered records that a parked record was delivered again to its
// consumer, which handled it.
type StreamRecordRedelivered struct {
	Consumer string `json:"consumer"`
	StreamID string `json:"streamId"`
	Version  int64  `json:"version"`
}

// EventType implements the service's event contract.
func (StreamRecordRedelivered) EventType() string { return "StreamRecordRedelivered" }

// Types returns the types of the parking streams' records.
func Types() []string {
	return []string{StreamRecordParked{}.EventType(), StreamRecordRedelivered{}.EventType()}
}

// Record is one parked record: which consumer it is kept for, and where it is in
// the Events table.
type Record struct {
	Consumer string    `json:"consumer"`
	StreamID string    `json:"streamId"`
	Version  int64     `json:"version"`
	Due      time.Time `json:"due"`
}

// Sort sorts parked records by due time, then by consumer, stream and version.
func Sort(rows []Record) {
	slices.SortFunc(rows, func(a, b Record) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Consumer, b.Consumer), cmp.Compare(a.StreamID, b.StreamID), cmp.Compare(a.Version, b.Version))
	})
}

// streamPrefix starts every parking stream's id.
const streamPrefix = "parked#"

// StreamOf returns the id of the parking stream of consumer's parked records of
// streamID.
func StreamOf(consumer, streamID string) string { return streamPrefix + consumer + "#" + streamID }

// IsParkingStream reports whether streamID is a parking stream's.
func IsParkingStream(streamID string) bool { return strings.HasPrefix(streamID, streamPrefix) }

// Subject is the subject of a parked record's row of the redelivery kind:
// consumer, version and stream id, separated by "#".
func Subject(consumer, streamID string, version int64) string {
	return consumer + "#" + strconv.FormatInt(version, 10) + "#" + streamID
}

// OfSubject reverses Subject; ok is false for a subject that is none, or names a
// consumer known returns false for.
func OfSubject(subject string, known func(consumer string) bool) (Record, bool) {
	consumer, rest, ok1 := strings.Cut(subject, "#")
	v, stream, ok2 := strings.Cut(rest, "#")
	version, err := strconv.ParseInt(v, 10, 64)
	if !ok1 || !ok2 || err != nil || version < 1 || stream == "" || strconv.FormatInt(version, 10) != v || !known(consumer) {
		return Record{}, false
	}
	return Record{Consumer: consumer, StreamID: stream, Version: version}, true
}

// Change is what a record of a parking stream says: a record parked, or
// redelivered.
type Change struct {
	Record
	Redelivered bool
}

// ChangeOf decodes a record of a parking stream; ok is false for every other
// record. One of those types that does not decode is an error wrapping
// eventstore.ErrCorruptRecord.
func ChangeOf(typ string, data []byte) (c Change, ok bool, err error) {
	switch typ {
	case StreamRecordParked{}.EventType():
		var e StreamRecordParked
		err = json.Unmarshal(data, &e)
		c = Change{Record: Record{Consumer: e.Consumer, StreamID: e.StreamID, Version: e.Version}}
	case StreamRecordRedelivered{}.EventType():
		var e StreamRecordRedelivered
		err = json.Unmarshal(data, &e)
		c = Change{Record: Record{Consumer: e.Consumer, StreamID: e.StreamID, Version: e.Version}, Redelivered: true}
	default:
		return Change{}, false, nil
	}
	if err == nil && (c.Consumer == "" || c.StreamID == "" || c.Version < 1) {
		err = fmt.Errorf("consumer %q, stream %q, version %d", c.Consumer, c.StreamID, c.Version)
	}
	if err != nil {
		return Change{}, false, fmt.Errorf("%w: %s: %w", eventstore.ErrCorruptRecord, typ, err)
	}
	return c, true, nil
}

// outstanding returns the versions a parking stream's records leave parked, in
// order: parked, and not redelivered since.
func outstanding(records []eventstore.Record) ([]int64, error) {
	state := map[int64]bool{}
	for _, r := range records {
		c, ok, err := ChangeOf(r.Type, r.Data)
		if err != nil {
			return nil, err
		}
		if ok {
			state[c.Version] = !c.Redelivered
		}
	}
	var out []int64
	for v, parked := range state {
		if parked {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out, nil
}
