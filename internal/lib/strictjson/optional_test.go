package strictjson_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

func TestOptionalTellsAZeroValueFromAnAbsentOne(t *testing.T) {
	type body struct {
		Amount strictjson.Optional[int64]  `json:"amount,omitzero"`
		ID     strictjson.Optional[string] `json:"id,omitzero"`
	}
	for _, c := range []struct {
		name, doc  string
		want       body
		wantMember string
	}{
		{"absent", `{}`, body{}, ""},
		{"zero values", `{"amount":0,"id":""}`, body{Amount: strictjson.Some(int64(0)), ID: strictjson.Some("")}, ""},
		{"values", `{"amount":1500,"id":"pay_1"}`, body{Amount: strictjson.Some(int64(1500)), ID: strictjson.Some("pay_1")}, ""},
		{"null", `{"amount":null}`, body{}, "amount"},
		{"a string for a number", `{"amount":"1500"}`, body{}, "amount"},
		{"a number for a string", `{"id":7}`, body{}, "id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got body
			err := strictjson.Decode([]byte(c.doc), &got)
			if c.wantMember != "" {
				var se *strictjson.Error
				if !errors.As(err, &se) || se.Member != c.wantMember {
					t.Fatalf("Decode(%s) = %v, want an *Error naming %q", c.doc, err, c.wantMember)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Decode(%s) = %+v, %v; want %+v", c.doc, got, err, c.want)
			}
			again, err := json.Marshal(got)
			if err != nil || string(again) != c.doc {
				t.Errorf("Marshal(%+v) = %s, %v; want %s", got, again, err, c.doc)
			}
		})
	}
}
