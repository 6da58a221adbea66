package strictjson

import (
	"encoding/json"
	"errors"
)

// Optional is a member that a document may leave out, but that holds a T when it
// is there: Present says whether the document named it, so that a zero value it
// states ("amount": 0, "id": "") never reads as one it left out. Decode refuses
// null for it, as for any member that cannot be null. It encodes as Value, and a
// member tagged omitzero is left out when Present is false.
type Optional[T any] struct {
	Value   T
	Present bool
}

// Some returns v as a present Optional.
func Some[T any](v T) Optional[T] { return Optional[T]{Value: v, Present: true} }

// IsZero reports whether o is absent: what omitzero leaves out.
func (o Optional[T]) IsZero() bool { return !o.Present }

// MarshalJSON encodes Value (null when o is absent and not left out).
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Present {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// UnmarshalJSON decodes a present member into Value. null is refused: a member
// that is there must hold a T.
func (o *Optional[T]) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return errors.New("must not be null")
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*o = Optional[T]{Value: v, Present: true}
	return nil
}
