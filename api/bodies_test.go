package api_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/sessions"
)

var (
	timeType   = reflect.TypeFor[time.Time]()
	rawType    = reflect.TypeFor[json.RawMessage]()
	bundleType = reflect.TypeFor[api.Bundle]()
	eventType  = reflect.TypeFor[api.Event]()
)

// sameWire fails unless a value the gateway writes as w decodes into r
// field for field: the same JSON names both ways, compatible kinds,
// nested structs, slices and maps alike.
func sameWire(t *testing.T, path string, w, r reflect.Type) {
	t.Helper()
	for w.Kind() == reflect.Pointer {
		w = w.Elem()
	}
	for r.Kind() == reflect.Pointer {
		r = r.Elem()
	}
	switch {
	case w == r, w == timeType && r == timeType:
		return
	case (w == rawType || w == bundleType) && (r == rawType || r == bundleType):
		return // JSON passed through (a MIME bundle)
	}
	if w.Kind() != r.Kind() {
		t.Errorf("%s: the gateway writes a %s, the client reads a %s", path, w, r)
		return
	}
	switch w.Kind() {
	case reflect.Struct:
		wf, rf := jsonFields(w), jsonFields(r)
		for name, typ := range wf {
			if rt, ok := rf[name]; ok {
				sameWire(t, path+"."+name, typ, rt)
			} else {
				t.Errorf("%s: %s writes %q, which %s has not", path, w, name, r)
			}
		}
		if r == eventType {
			return // the client's Event is the union of every frame: it reads more than an output
		}
		for name := range rf {
			if _, ok := wf[name]; !ok {
				t.Errorf("%s: %s reads %q, which %s never writes", path, r, name, w)
			}
		}
	case reflect.Slice, reflect.Array:
		sameWire(t, path+"[]", w.Elem(), r.Elem())
	case reflect.Map:
		sameWire(t, path+"{}", w.Elem(), r.Elem())
	}
}

// TestRESTBodiesAreTheWireTypes (fast tier): what the gateway writes as a
// session, an execution (its outputs included), a context, a command and
// the metrics has exactly the fields of package api's types, which the
// Go client reads and the OpenAPI schemas are generated from: a field
// renamed or dropped on either side fails here.
func TestRESTBodiesAreTheWireTypes(t *testing.T) {
	for _, c := range []struct {
		name          string
		writes, reads reflect.Type
	}{
		{"session", reflect.TypeFor[sessions.Info](), reflect.TypeFor[api.Session]()},
		{"execution", reflect.TypeFor[sessions.Execution](), reflect.TypeFor[api.Execution]()},
		{"context", reflect.TypeFor[sessions.ContextInfo](), reflect.TypeFor[api.Context]()},
		{"command", reflect.TypeFor[sessions.CommandInfo](), reflect.TypeFor[api.CommandInfo]()},
		{"metrics", reflect.TypeFor[sessions.Metrics](), reflect.TypeFor[api.Metrics]()},
		{"completion", reflect.TypeFor[sessions.Completion](), reflect.TypeFor[api.Completion]()},
		{"inspection", reflect.TypeFor[sessions.Inspection](), reflect.TypeFor[api.Inspection]()},
	} {
		sameWire(t, c.name, c.writes, c.reads)
	}
}
