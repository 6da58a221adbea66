// Package strictjson decodes the JSON documents the service is sent, strictly: one
// value, member names exactly as declared (encoding/json would match them in any
// case), no member twice, no unknown member, no null where no null fits, nesting
// bounded, and nothing after the value. It is the service's one JSON body decoder.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Decode accepts. No body the
// service takes nests more than one level, and refusing early keeps the work a
// hostile body causes to one pass over its bytes.
const MaxDepth = 16

// Error is why a document was refused. Member is the path of the member at fault
// ("bikeId", "data.object.id", "items[2]"), or "" when the document as a whole is;
// Reason says what is wrong, naming the member.
type Error struct {
	Member string
	Reason string
}

func (e *Error) Error() string { return e.Reason }

// Decode decodes data, one JSON object, into v, a non-nil pointer. It refuses, with
// an *Error and leaving v as it was: data that is not UTF-8 or not JSON, a value
// other than an object, nesting deeper than MaxDepth, a member given twice in one
// object, a member whose name matches a field of v only when case is ignored, a
// member v has no field for, null for a field that cannot be null (a string, a
// number, a boolean, a struct), a value of the wrong type, and anything but white
// space after the object. It is safe on any input.
func Decode(data []byte, v any) error {
	if !utf8.Valid(data) {
		return &Error{Reason: "the body is not UTF-8"}
	}
	if tooDeep(data, MaxDepth) {
		return &Error{Reason: fmt.Sprintf("arrays and objects nest more than %d levels deep", MaxDepth)}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &Error{Reason: "strictjson: Decode needs a non-nil pointer"}
	}
	end, err := check(data, rv.Type().Elem(), true)
	if err != nil {
		return err
	}
	// The document is known to be well-formed and strict; encoding/json decodes it,
	// and refuses what the walk leaves to it: values of the wrong type.
	fresh := reflect.New(rv.Type().Elem())
	dec := json.NewDecoder(bytes.NewReader(data[:end]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(fresh.Interface()); err != nil {
		return decodeError(err)
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

// CheckNames checks data, one JSON value, the way Decode does for the names of its
// members: none given twice in one object, at any depth, and none that matches a
// field of v's type only when case is ignored. It lets unknown members and nulls
// through, decodes nothing and allows nesting up to maxDepth: it is for documents
// another library decodes with encoding/json, such as the events stripe-go parses,
// so that the names that library reads are the ones the document holds. Types with
// their own UnmarshalJSON are checked against their struct fields, as such methods
// commonly decode through a copy of the type. It is safe on any input.
func CheckNames(data []byte, v any, maxDepth int) error {
	if tooDeep(data, maxDepth) {
		return &Error{Reason: fmt.Sprintf("arrays and objects nest more than %d levels deep", maxDepth)}
	}
	t := reflect.TypeOf(v)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	_, err := check(data, t, false)
	return err
}

// check walks the one value in data against t (nil: any shape) and returns the
// offset where the value ends. With strict, the value must be an object, and
// unknown members and misplaced nulls are refused.
func check(data []byte, t reflect.Type, strict bool) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := walker{dec: dec, strict: strict}
	first, err := dec.Token()
	if err == io.EOF {
		return 0, &Error{Reason: "the body must be a JSON object"}
	}
	if err != nil {
		return 0, syntaxError(err)
	}
	if strict && first != json.Delim('{') {
		return 0, &Error{Reason: "the body must be a JSON object"}
	}
	if err := w.value(first, t, ""); err != nil {
		return 0, err
	}
	end := int(dec.InputOffset())
	// Only white space may follow the value: json.Decoder.More would let a stray
	// closing bracket through.
	if len(bytes.Trim(data[end:], " \t\r\n")) > 0 {
		return 0, &Error{Reason: "unexpected data after the JSON value"}
	}
	return end, nil
}

type walker struct {
	dec    *json.Decoder
	strict bool
}

// value checks the value that begins with tok, at path, against t.
func (w walker) value(tok json.Token, t reflect.Type, path string) error {
	pointer := t != nil && t.Kind() == reflect.Pointer
	t = deref(t)
	switch tok {
	case json.Delim('{'):
		return w.object(t, path)
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && !isRaw(t) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More(); i++ {
			tok, err := w.dec.Token()
			if err != nil {
				return syntaxError(err)
			}
			if err := w.value(tok, elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		_, err := w.dec.Token()
		return syntaxErrorOrNil(err)
	case nil:
		if w.strict && t != nil && !pointer && !nullable(t) && path != "" {
			return &Error{Member: path, Reason: fmt.Sprintf("member %q must not be null", path)}
		}
	}
	return nil
}

// object checks the members of an object, whose opening brace is read, against t.
func (w walker) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type
	var elem reflect.Type // of a map
	if t != nil {
		switch {
		case t.Kind() == reflect.Struct:
			fields = fieldsOf(t)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		name, _ := tok.(string)
		member := name
		if path != "" {
			member = path + "." + name
		}
		if seen[name] {
			return &Error{Member: member, Reason: fmt.Sprintf("member %q appears twice", member)}
		}
		seen[name] = true
		child := elem
		if fields != nil {
			ft, ok := fields[name]
			if !ok {
				if declared, found := foldMatch(fields, name); found {
					return &Error{Member: member, Reason: fmt.Sprintf("member %q is not known: names are case-sensitive, and the member is %q", member, joinPath(path, declared))}
				}
				if w.strict {
					return &Error{Member: member, Reason: fmt.Sprintf("unknown member %q", member)}
				}
			}
			child = ft // nil for an unknown member: any shape
		}
		tok, err = w.dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		if err := w.value(tok, child, member); err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return syntaxErrorOrNil(err)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// foldMatch returns the declared name that name matches when case is ignored, as
// encoding/json matches names (bytes.EqualFold).
func foldMatch(fields map[string]reflect.Type, name string) (string, bool) {
	for declared := range fields {
		if strings.EqualFold(declared, name) {
			return declared, true
		}
	}
	return "", false
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

func isRaw(t reflect.Type) bool { return t == rawMessage }

// nullable reports whether encoding/json gives null a meaning for t, as it does for
// a pointer: an interface, a map, a slice. For other kinds it silently leaves the field as it
// was, which a strict reading refuses.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface, reflect.Map, reflect.Slice:
		return true
	}
	return false
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// fieldsOf returns the JSON names of struct t's fields and their types, as
// encoding/json names them: the tag's name, else the field's; "-" skipped;
// untagged embedded structs' fields promoted, the shallower field winning.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	collect(t, fields, map[reflect.Type]bool{})
	fieldCache.Store(t, fields)
	return fields
}

func collect(t reflect.Type, into map[string]reflect.Type, visiting map[reflect.Type]bool) {
	if visiting[t] {
		return
	}
	visiting[t] = true
	defer delete(visiting, t)
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			if ft := deref(f.Type); ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := into[name]; !taken {
			into[name] = f.Type
		}
	}
	for _, e := range embedded {
		promoted := map[string]reflect.Type{}
		collect(e, promoted, visiting)
		for name, ft := range promoted {
			if _, taken := into[name]; !taken {
				into[name] = ft
			}
		}
	}
}

// tooDeep reports whether the arrays and objects in data nest more than limit
// levels deep. It is one pass over the bytes that allocates nothing: brackets
// inside strings, escaped quotes included, do not count. It does not validate the
// JSON; the walk refuses whatever else is wrong.
func tooDeep(data []byte, limit int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > limit {
				return true
			}
		case (c == ']' || c == '}') && depth > 0:
			depth--
		}
	}
	return false
}

func syntaxErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	return syntaxError(err)
}

func syntaxError(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return &Error{Reason: fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Reason: "the JSON ends too soon"}
	}
	return &Error{Reason: "malformed JSON"}
}

// decodeError turns encoding/json's refusal of a checked document into an *Error.
func decodeError(err error) error {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		if typ.Field != "" {
			return &Error{Member: typ.Field, Reason: fmt.Sprintf("member %q must be %s", typ.Field, jsonKind(typ.Type))}
		}
		return &Error{Reason: "the body must be a JSON object"}
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return syntaxError(err)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return &Error{Reason: msg}
}

// jsonKind names what JSON value t takes: "a string", "a number", ...
func jsonKind(t reflect.Type) string {
	switch deref(t).Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a " + t.String()
}
