package eventstore

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Memory is an in-memory Store, safe for concurrent use. It keeps the same contract as
// the DynamoDB store, including its size limits, and is stricter in one way: an
// expected version beyond the stream's end is a conflict, so a caller that invents a
// version fails here instead of leaving a gap.
type Memory struct {
	mu      sync.RWMutex
	streams map[string][]Record
	now     func() time.Time
}

var (
	_ MultiStreamStore = (*Memory)(nil)
	_ BackwardReader   = (*Memory)(nil)
)

// NewMemory returns an empty store that stamps unstamped events with time.Now.
func NewMemory() *Memory { return NewMemoryWithClock(time.Now) }

// NewMemoryWithClock returns an empty store that stamps unstamped events with now().
func NewMemoryWithClock(now func() time.Time) *Memory {
	return &Memory{streams: make(map[string][]Record), now: now}
}

// Append implements Store.
func (m *Memory) Append(ctx context.Context, streamID string, expectedVersion int64, events ...Event) ([]Record, error) {
	if err := ValidateAppend(streamID, expectedVersion, events, ApproximateSize); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stamped := Stamp(events, m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	stream := m.streams[streamID]
	if int64(len(stream)) != expectedVersion {
		return nil, &ConflictError{StreamID: streamID, ExpectedVersion: expectedVersion}
	}
	out := make([]Record, len(stamped))
	for i, e := range stamped {
		out[i] = Record{StreamID: streamID, Version: expectedVersion + int64(i) + 1, Event: e}
	}
	m.streams[streamID] = append(stream, out...)
	return copyRecords(out), nil
}

// AppendStreams implements MultiStreamStore. Under the store's lock it checks every
// expected version first, then writes every stream, so that no reader ever sees part
// of it.
func (m *Memory) AppendStreams(ctx context.Context, appends ...StreamAppend) ([]Record, error) {
	if err := ValidateAppendStreams(appends, ApproximateSize); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := m.now()
	parts := make([][]Record, len(appends))
	count := 0
	for i, a := range appends {
		parts[i] = make([]Record, len(a.Events))
		for j, e := range Stamp(a.Events, now) {
			parts[i][j] = Record{StreamID: a.StreamID, Version: a.ExpectedVersion + int64(j) + 1, Event: e}
		}
		count += len(a.Events)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range appends {
		if int64(len(m.streams[a.StreamID])) != a.ExpectedVersion {
			return nil, &ConflictError{StreamID: a.StreamID, ExpectedVersion: a.ExpectedVersion}
		}
	}
	out := make([]Record, 0, count)
	for i, a := range appends {
		m.streams[a.StreamID] = append(m.streams[a.StreamID], parts[i]...)
		out = append(out, parts[i]...)
	}
	return copyRecords(out), nil
}

// ReadBackward implements BackwardReader.
func (m *Memory) ReadBackward(ctx context.Context, streamID string, beforeVersion int64, limit int) ([]Record, error) {
	if err := ValidateReadBackward(streamID, beforeVersion, limit); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	stream := m.streams[streamID]
	end := int64(len(stream)) // versions 1..end are stream[0:end]
	if beforeVersion > 0 {
		end = min(end, beforeVersion-1)
	}
	start := max(end-int64(limit), 0)
	if start >= end {
		return nil, nil
	}
	out := copyRecords(stream[start:end])
	slices.Reverse(out)
	return out, nil
}

// Read implements Store.
func (m *Memory) Read(ctx context.Context, streamID string, fromVersion int64) ([]Record, error) {
	if err := ValidateRead(streamID, fromVersion); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	stream := m.streams[streamID]
	start := max(fromVersion, 1) - 1
	if start >= int64(len(stream)) {
		return nil, nil
	}
	return copyRecords(stream[start:]), nil
}

// copyRecords returns a deep copy so that callers cannot change what is stored.
func copyRecords(rs []Record) []Record {
	out := make([]Record, len(rs))
	for i, r := range rs {
		r.Data = append([]byte(nil), r.Data...)
		r.Tags = append([]string(nil), r.Tags...)
		out[i] = r
	}
	return out
}
