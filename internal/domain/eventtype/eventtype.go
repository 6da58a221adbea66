// Package eventtype is how a context declares its events once: each event's stored
// type name with its struct. A context's Set decodes stored JSON into the struct its
// type names and lists its types, so that no context writes that table by hand.
// It is pure: the standard library only.
package eventtype

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrUnknown is returned, wrapped with the context and the type name, by
// Set.Decode for a type its context does not declare. Every context's
// ErrUnknownEventType is this error.
var ErrUnknown = errors.New("unknown event type")

// Named is what an event struct is: its stored type name comes from the struct, so
// renaming one is a schema change.
type Named interface{ EventType() string }

// Decl is one event of a context: its type name and how its JSON becomes its struct.
type Decl struct {
	name   string
	decode func([]byte) (any, error)
}

// Of declares the event struct T under the name T's EventType returns.
func Of[T Named]() Decl {
	var zero T
	return Decl{name: zero.EventType(), decode: func(data []byte) (any, error) {
		var e T
		err := json.Unmarshal(data, &e)
		return e, err
	}}
}

// Set is the events of one context, as E (the context's event interface).
type Set[E Named] struct {
	context string
	names   []string
	decls   map[string]Decl
}

// Declare returns the set of context's events. It panics, when the context's
// package is initialised, if a name is declared twice or a struct is not an E: both
// are mistakes in the declaration itself, never in what is decoded.
func Declare[E Named](context string, decls ...Decl) Set[E] {
	s := Set[E]{context: context, decls: make(map[string]Decl, len(decls))}
	for _, d := range decls {
		if _, dup := s.decls[d.name]; dup {
			panic(fmt.Sprintf("eventtype: %s declares %q twice", context, d.name))
		}
		if v, _ := d.decode([]byte("{}")); !isE[E](v) {
			panic(fmt.Sprintf("eventtype: %s declares %q, whose struct is not one of its events", context, d.name))
		}
		s.decls[d.name] = d
		s.names = append(s.names, d.name)
	}
	return s
}

func isE[E any](v any) bool {
	_, ok := v.(E)
	return ok
}

// Types returns the type name of every event of the set, in declaration order, in
// a new slice.
func (s Set[E]) Types() []string { return append([]string(nil), s.names...) }

// Has reports whether the set declares eventType.
func (s Set[E]) Has(eventType string) bool {
	_, ok := s.decls[eventType]
	return ok
}

// Decode decodes stored JSON data into the event struct (a value, not a pointer)
// named by eventType. Unknown JSON fields are ignored, so that older code reads
// newer events; invalid JSON is an error wrapping the json error. An unknown
// eventType is an error wrapping ErrUnknown.
func (s Set[E]) Decode(eventType string, data []byte) (E, error) {
	var zero E
	d, ok := s.decls[eventType]
	if !ok {
		return zero, fmt.Errorf("%s: %w %q", s.context, ErrUnknown, eventType)
	}
	v, err := d.decode(data)
	if err != nil {
		return zero, fmt.Errorf("%s: decode %s: %w", s.context, eventType, err)
	}
	return v.(E), nil
}
