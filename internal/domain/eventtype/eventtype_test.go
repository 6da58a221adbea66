package eventtype_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/domain/eventtype"
)

type event interface{ EventType() string }

type opened struct {
	ID string `json:"id"`
}

func (opened) EventType() string { return "Opened" }

type closed struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

func (closed) EventType() string { return "Closed" }

// other is an event struct of another context: not an event of this one.
type other struct{}

func (other) EventType() string { return "Other" }

type mine interface {
	EventType() string
	mine()
}

func (opened) mine() {}
func (closed) mine() {}

func TestASetDecodesWhatItDeclares(t *testing.T) {
	set := eventtype.Declare[mine]("door", eventtype.Of[opened](), eventtype.Of[closed]())
	if got := set.Types(); !slices.Equal(got, []string{"Opened", "Closed"}) {
		t.Errorf("Types() = %v, want the declaration's order", got)
	}
	e, err := set.Decode("Closed", []byte(`{"id":"d1","reason":"wind","later":true}`))
	if err != nil || e != (closed{ID: "d1", Reason: "wind"}) {
		t.Errorf("Decode = %#v, %v; want the struct, unknown fields ignored", e, err)
	}
	if _, err := set.Decode("Other", []byte(`{}`)); !errors.Is(err, eventtype.ErrUnknown) || err.Error() != `door: unknown event type "Other"` {
		t.Errorf("an undeclared type: %v", err)
	}
	if e, err := set.Decode("Opened", []byte(`{"id":`)); err == nil || e != nil {
		t.Errorf("invalid JSON: %#v, %v", e, err)
	}
	if !set.Has("Opened") || set.Has("Other") {
		t.Error("Has does not follow the declaration")
	}
	types := set.Types()
	types[0] = "changed"
	if set.Types()[0] != "Opened" {
		t.Error("Types shares its slice")
	}
}

func TestAMistakenDeclarationIsRefusedAtOnce(t *testing.T) {
	for name, declare := range map[string]func(){
		"a name twice":         func() { eventtype.Declare[mine]("door", eventtype.Of[opened](), eventtype.Of[opened]()) },
		"another context's":    func() { eventtype.Declare[mine]("door", eventtype.Of[opened](), eventtype.Of[other]()) },
		"an interface too big": func() { eventtype.Declare[mine]("door", eventtype.Of[other]()) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: declared without a panic", name)
				}
			}()
			declare()
		}()
	}
	_ = eventtype.Declare[event]("any", eventtype.Of[other]()) // any Named struct is an event
}
