package api_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/api"
)

// jsonFields returns the JSON name of every field v's struct type writes
// (embedded structs flattened), with its Go type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// compatible reports whether a value of type from decodes into a field
// of type into without loss: the same type once pointers are followed,
// or the same basic kind (EventType into string).
func compatible(from, into reflect.Type) bool {
	for from.Kind() == reflect.Pointer {
		from = from.Elem()
	}
	for into.Kind() == reflect.Pointer {
		into = into.Elem()
	}
	if from == into {
		return true
	}
	switch from.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		return from.Kind() == into.Kind()
	}
	return false
}

// covers fails unless union has every field of every struct of parts,
// under the same JSON name and of a compatible type.
func covers(t *testing.T, union reflect.Type, parts []reflect.Type) {
	t.Helper()
	have := jsonFields(union)
	for _, p := range parts {
		for name, typ := range jsonFields(p) {
			u, ok := have[name]
			switch {
			case !ok:
				t.Errorf("%s has no field %q of %s", union, name, p)
			case !compatible(typ, u):
				t.Errorf("%s.%s is a %s; %s's is a %s", union, name, u, p, typ)
			}
		}
	}
}

// TestEventCarriesEveryFrameField: the Go client's flat Event decodes
// every field of every frame the gateway writes, so a field added to or
// renamed in a frame fails here until Event follows.
func TestEventCarriesEveryFrameField(t *testing.T) {
	var parts []reflect.Type
	for _, f := range api.ServerFrames() {
		parts = append(parts, reflect.TypeOf(f))
	}
	covers(t, reflect.TypeFor[api.Event](), parts)
}

// TestAnyClientFrameCarriesEveryClientFrameField: the union the gateway
// decodes client frames into reads every field the client frames have.
func TestAnyClientFrameCarriesEveryClientFrameField(t *testing.T) {
	var parts []reflect.Type
	for _, f := range api.ClientFrames() {
		parts = append(parts, reflect.TypeOf(f))
	}
	covers(t, reflect.TypeFor[api.AnyClientFrame](), parts)
}

// TestFrameTypesAreDistinct: one struct per frame type, and each a
// struct with a type field.
func TestFrameTypesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	check := func(v any, typ string) {
		if seen[typ] {
			t.Errorf("two frames of type %q", typ)
		}
		seen[typ] = true
		if _, ok := jsonFields(reflect.TypeOf(v))["type"]; !ok {
			t.Errorf("%T has no type field", v)
		}
	}
	for _, f := range api.ServerFrames() {
		check(f, "server "+string(f.FrameType()))
	}
	for _, f := range api.ClientFrames() {
		check(f, "client "+f.ClientFrameType())
	}
	// A client frame as the Go client sends it decodes into the union.
	data, _ := json.Marshal(api.CompleteFrame{Type: api.FrameComplete, ID: "q", Code: "pri", CursorPos: 3})
	var u api.AnyClientFrame
	if err := json.Unmarshal(data, &u); err != nil || u.Code == nil || *u.Code != "pri" || u.CursorPos == nil || *u.CursorPos != 3 {
		t.Fatalf("%s decoded as %+v: %v", data, u, err)
	}
}
