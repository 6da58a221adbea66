package strictjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/lib/strictjson"
)

type inner struct {
	Name string `json:"name"`
}

type embedded struct {
	Colour string `json:"colour"`
}

type doc struct {
	embedded
	BikeID string            `json:"bikeId"`
	Count  int               `json:"count,omitempty"`
	Inner  *inner            `json:"inner,omitempty"`
	List   []inner           `json:"list,omitempty"`
	Tags   map[string]string `json:"tags,omitempty"`
	Any    any               `json:"any,omitempty"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	Plain  string
	Hidden string `json:"-"`
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		member     string // the member the error names; "" for the document
		reason     string // part of the error's reason; "" for success
	}{
		{"an object", `{"bikeId":"a"}`, "", ""},
		{"every kind of field", `{"bikeId":"a","count":2,"inner":{"name":"n"},"list":[{"name":"x"}],"tags":{"A":"1","a":"2"},"any":{"k":[1,{"K":2}]},"raw":{"x":1},"Plain":"p","colour":"red"}`, "", ""},
		{"null where null fits", `{"inner":null,"list":null,"tags":null,"any":null,"raw":null}`, "", ""},
		{"white space after", "{}\r\n\t ", "", ""},
		{"escaped name", `{"bike\u0049d":"a"}`, "", ""},

		{"a member twice", `{"bikeId":"a","bikeId":"b"}`, "bikeId", `member "bikeId" appears twice`},
		{"a member twice, escaped", `{"bikeId":"a","bike\u0049d":"b"}`, "bikeId", "appears twice"},
		{"a member in another case", `{"BIKEID":"c"}`, "BIKEID", `names are case-sensitive, and the member is "bikeId"`},
		{"a member in another case, Unicode folding", "{\"bi\u212aeId\":\"c\"}", "bi\u212aeId", "case-sensitive"},
		{"both cases", `{"bikeId":"a","BikeId":"b"}`, "BikeId", "case-sensitive"},
		{"an untagged field in another case", `{"plain":"p"}`, "plain", `the member is "Plain"`},
		{"a promoted field in another case", `{"Colour":"red"}`, "Colour", "case-sensitive"},
		{"nested, in another case", `{"inner":{"Name":"n"}}`, "inner.Name", `the member is "inner.name"`},
		{"nested in a list, twice", `{"list":[{"name":"a"},{"name":"a","name":"b"}]}`, "list[1].name", "appears twice"},
		{"twice in a map", `{"tags":{"a":"1","a":"2"}}`, "tags.a", "appears twice"},
		{"twice deep inside any", `{"any":[{"x":{"y":1,"y":2}}]}`, "any[0].x.y", "appears twice"},
		{"twice inside raw", `{"raw":{"y":1,"y":2}}`, "raw.y", "appears twice"},
		{"an unknown member", `{"bikeId":"a","price":0}`, "price", `unknown member "price"`},
		{"a skipped field", `{"Hidden":"h"}`, "Hidden", "unknown member"},
		{"an unknown nested member", `{"inner":{"age":1}}`, "inner.age", "unknown member"},
		{"null string", `{"bikeId":null}`, "bikeId", "must not be null"},
		{"null in a list of structs", `{"list":[null]}`, "list[0]", "must not be null"},
		{"wrong type", `{"bikeId":7}`, "bikeId", `member "bikeId" must be a string`},
		{"wrong nested type", `{"inner":{"name":true}}`, "inner.name", "must be a string"},
		{"null body", `null`, "", "must be a JSON object"},
		{"array body", `["a"]`, "", "must be a JSON object"},
		{"string body", `"a"`, "", "must be a JSON object"},
		{"empty body", ``, "", "must be a JSON object"},
		{"white space body", " \n", "", "must be a JSON object"},
		{"binary body", "\xff\xfe{}", "", "not UTF-8"},
		{"not UTF-8 inside a string", "{\"bikeId\":\"\xff\"}", "", "not UTF-8"},
		{"malformed", `{"bikeId":"a",`, "", "JSON"},
		{"unterminated", `{"bikeId":"a"`, "", "JSON"},
		{"bad literal", `{"bikeId":nul}`, "", "malformed JSON"},
		{"trailing data", `{} {}`, "", "after the JSON value"},
		{"trailing brackets", `{}]]]`, "", "after the JSON value"},
		{"trailing garbage after white space", "{}\n\t x", "", "after the JSON value"},
		{"too deep", strings.Repeat(`{"any":`, strictjson.MaxDepth) + "{}" + strings.Repeat("}", strictjson.MaxDepth), "", "nest more than 16 levels"},
		{"at the depth limit", strings.Repeat(`{"any":`, strictjson.MaxDepth-1) + "{}" + strings.Repeat("}", strictjson.MaxDepth-1), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := doc{BikeID: "before"}
			err := strictjson.Decode([]byte(tc.body), &got)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("Decode(%s) = %v", tc.body, err)
				}
				return
			}
			var se *strictjson.Error
			if !errors.As(err, &se) {
				t.Fatalf("Decode(%s) = %v, want a *strictjson.Error", tc.body, err)
			}
			if se.Member != tc.member || !strings.Contains(se.Reason, tc.reason) {
				t.Errorf("Decode(%s) = {%q, %q}, want member %q and a reason with %q", tc.body, se.Member, se.Reason, tc.member, tc.reason)
			}
			if got.BikeID != "before" || got.Count != 0 {
				t.Errorf("a refused document changed the value: %+v", got)
			}
		})
	}
}

func TestDecodeFillsTheValue(t *testing.T) {
	var got doc
	if err := strictjson.Decode([]byte(`{"bikeId":"a","count":3,"inner":{"name":"n"},"colour":"red"}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.BikeID != "a" || got.Count != 3 || got.Inner == nil || got.Inner.Name != "n" || got.Colour != "red" {
		t.Errorf("decoded %+v", got)
	}
	if err := strictjson.Decode([]byte(`{}`), got); err == nil {
		t.Error("Decode into a non-pointer succeeded")
	}
}

// custom decodes itself through a copy of its type, as stripe-go's types do.
type custom struct {
	ID       string            `json:"id"`
	Metadata map[string]string `json:"metadata"`
	Nested   *custom           `json:"nested"`
}

func (c *custom) UnmarshalJSON(b []byte) error {
	type plain custom
	return json.Unmarshal(b, (*plain)(c))
}

func TestCheckNames(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		member     string
		ok         bool
	}{
		{"unknown members and nulls", `{"id":"a","unknown":{"x":[1,2]},"metadata":null,"nested":{"id":null,"other":1}}`, "", true},
		{"a scalar", `"an id"`, "", true},
		{"a member twice", `{"id":"a","id":"b"}`, "id", false},
		{"a member in another case", `{"ID":"a"}`, "ID", false},
		{"nested in another case", `{"nested":{"Metadata":{}}}`, "nested.Metadata", false},
		{"twice in metadata", `{"metadata":{"k":"1","k":"2"}}`, "metadata.k", false},
		{"twice inside an unknown member", `{"x":[{"a":1,"a":2}]}`, "x[0].a", false},
		{"too deep", strings.Repeat("[", 5) + strings.Repeat("]", 5), "", false},
		{"trailing data", `{"id":"a"}x`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := strictjson.CheckNames([]byte(tc.body), &custom{}, 4)
			if tc.ok {
				if err != nil {
					t.Fatalf("CheckNames(%s) = %v", tc.body, err)
				}
				return
			}
			var se *strictjson.Error
			if !errors.As(err, &se) || se.Member != tc.member {
				t.Fatalf("CheckNames(%s) = %v, want an error naming %q", tc.body, err, tc.member)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"bikeId":"a"}`, `{"bikeId":"a","bikeId":"b"}`, `{"BIKEID":"c"}`, `{"inner":{"Name":1}}`,
		`{"list":[{"name":"a"},null]}`, `{"any":{"a":[{"b":{}}]}}`, `{"raw":[1,{"x":1,"x":2}]}`,
		`{"tags":{"a":"b"}}`, `{}]`, `null`, "\xff", `{"bi\u212aeId":1}`, `[[[[[[[[[[[[[[[[[[`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d doc
		err := strictjson.Decode(data, &d)
		if err == nil {
			// What is accepted is valid JSON that encoding/json decodes alike.
			var again doc
			if !json.Valid(data) || json.Unmarshal(data, &again) != nil {
				t.Fatalf("accepted %q, which encoding/json refuses", data)
			}
		} else {
			var se *strictjson.Error
			if !errors.As(err, &se) || se.Reason == "" {
				t.Fatalf("Decode(%q) = %v, not an *Error with a reason", data, err)
			}
		}
		_ = strictjson.CheckNames(data, &custom{}, strictjson.MaxDepth)
		_ = strictjson.CheckNames(data, nil, strictjson.MaxDepth)
	})
}
