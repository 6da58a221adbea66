package eventstore

import "fmt"

// Corrupt reports that r cannot be read as the event its type names: err, wrapped
// with ErrCorruptRecord and the record's stream and version. It is the one form of
// that error, wherever a record is decoded.
func Corrupt(r Record, err error) error {
	return fmt.Errorf("%w: stream %q version %d: %w", ErrCorruptRecord, r.StreamID, r.Version, err)
}

// Decode decodes r with decode (its context's DecodeEvent) into the event struct T
// its type names. A record that does not decode, or decodes into another struct
// than T, is Corrupt.
func Decode[T, E any](r Record, decode func(eventType string, data []byte) (E, error)) (T, error) {
	var zero T
	e, err := decode(r.Type, r.Data)
	if err != nil {
		return zero, Corrupt(r, err)
	}
	t, ok := any(e).(T)
	if !ok {
		return zero, Corrupt(r, fmt.Errorf("a %s is not a %T", r.Type, zero))
	}
	return t, nil
}
