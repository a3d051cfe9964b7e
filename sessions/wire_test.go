package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/api"
)

// publishedTypes returns every EventType constant the package declares
// (parsed from its source: a new type is covered without a list to
// keep).
func publishedTypes(t *testing.T) []EventType {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []EventType
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "EventType" {
					continue
				}
				for _, v := range vs.Values {
					s, err := strconv.Unquote(v.(*ast.BasicLit).Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, EventType(s))
				}
			}
		}
	}
	if len(out) < 19 {
		t.Fatalf("found only %d event types: %v", len(out), out)
	}
	return out
}

// TestFrameIsExhaustive: every event type the package declares converts
// to the api frame of that type (one of api.ServerFrames); a type
// without a frame fails.
func TestFrameIsExhaustive(t *testing.T) {
	known := map[reflect.Type]api.EventType{}
	for _, f := range api.ServerFrames() {
		known[reflect.TypeOf(f)] = f.FrameType()
	}
	for _, typ := range publishedTypes(t) {
		f, err := Event{Type: typ}.Frame()
		if err != nil {
			t.Errorf("event type %q: %v", typ, err)
			continue
		}
		if want, ok := known[reflect.TypeOf(f)]; !ok || want != api.EventType(typ) || f.FrameType() != api.EventType(typ) {
			t.Errorf("event type %q converts to a %T (frame type %q)", typ, f, want)
		}
	}
	if _, err := (Event{Type: "bogus"}).Frame(); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("an unknown type converts: %v", err)
	}
}

// fill sets every field of the struct v points to to a distinct non-zero
// value (n counts them), for the fields keep accepts.
func fill(v reflect.Value, n *int, keep func(reflect.StructField) bool) {
	for _, f := range reflect.VisibleFields(v.Type()) {
		if f.Anonymous || !f.IsExported() || !keep(f) {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		*n++
		setValue(fv, *n)
	}
}

func setValue(fv reflect.Value, n int) {
	if fv.Kind() == reflect.Pointer {
		fv.Set(reflect.New(fv.Type().Elem()))
		fv = fv.Elem()
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString("v" + strconv.Itoa(n))
	case reflect.Bool:
		fv.SetBool(true)
	case reflect.Int, reflect.Int64:
		fv.SetInt(int64(n))
	case reflect.Float64:
		fv.SetFloat(float64(n) + 0.5)
	case reflect.Slice:
		if fv.Type() == reflect.TypeFor[json.RawMessage]() {
			fv.SetBytes([]byte(`{"k":` + strconv.Itoa(n) + `}`))
			return
		}
		s := reflect.MakeSlice(fv.Type(), 1, 1)
		setValue(s.Index(0), n)
		fv.Set(s)
	}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// TestFrameWritesTheEventsJSON: for every event type, an event with each
// field its frame has set (to distinct values) is written exactly as the
// event itself marshals: same names, values, order. A frame field the
// conversion forgets, or a name that differs from the event's, fails.
func TestFrameWritesTheEventsJSON(t *testing.T) {
	for _, typ := range publishedTypes(t) {
		zero, err := Event{Type: typ}.Frame()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, f := range reflect.VisibleFields(reflect.TypeOf(zero)) {
			if !f.Anonymous {
				names[jsonName(f)] = true
			}
		}
		ev := Event{Type: typ}
		n := 0
		fill(reflect.ValueOf(&ev).Elem(), &n, func(f reflect.StructField) bool {
			return names[jsonName(f)] && jsonName(f) != "type"
		})
		if n != len(names)-1 {
			t.Errorf("%s: the event has %d of its frame's %d fields", typ, n, len(names)-1)
		}
		want, _ := json.Marshal(ev)
		frame, err := ev.Frame()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(frame)
		if !bytes.Equal(got, want) {
			t.Errorf("%s frame:\n got %s\nwant %s", typ, got, want)
		}
	}
}

// TestFrameOfPublishedEvents: events as the package publishes them
// (with their zero values and absent pointers) keep their JSON.
func TestFrameOfPublishedEvents(t *testing.T) {
	for _, ev := range []Event{
		{Seq: 1, Type: EventQueued, ID: "a", Position: ptr(0)},
		{Seq: 2, Type: EventStarted, ID: "a", Exec: &ExecInfo{Code: "x"}},
		{Seq: 3, Type: EventStream, ID: "a", Name: "stdout", Text: "hi\n"},
		{Seq: 4, Type: EventResult, ID: "a", Data: json.RawMessage(`{"text/plain":"42"}`), Metadata: json.RawMessage(`{}`), ExecutionCount: ptr(0)},
		{Seq: 5, Type: EventError, ID: "a", Name: "E", Traceback: []string{}},
		{Seq: 6, Type: EventClearOutput, ID: "a"},
		{Seq: 7, Type: EventInputRequest, ID: "a", Prompt: ptr(""), Password: ptr(false)},
		{Seq: 8, Type: EventFile, ID: "a", Path: "f", Size: ptr(int64(0)), Change: "created"},
		{Seq: 9, Type: EventDone, ID: "a", Status: StatusOK, ExecutionCount: ptr(1), DurationMS: ptr(int64(0)),
			Truncated: ptr(false), StateLost: ptr(false), Payload: []json.RawMessage{[]byte(`{}`)}},
		{Seq: 10, Type: EventKernel, State: "idle"},
		{Seq: 11, Type: EventGap, Reason: "r"},
		{Seq: 12, Type: EventNetwork, Host: "h", Port: ptr(443), Allowed: ptr(false), Reason: "r"},
		{Seq: 13, Type: EventContext, State: "created", Context: "c1", Name: "python3"},
		{Seq: 14, Type: EventCommand, PID: ptr(1), State: "exited", ExitCode: ptr(0), DurationMS: ptr(int64(3)), TimedOut: ptr(true)},
		{Seq: 15, Type: EventSetNextInput, ID: "a", Text: "x", Replace: ptr(false)},
		{Seq: 16, Type: EventAskExit, ID: "a", KeepKernel: ptr(false)},
		{Seq: 17, Type: EventPage, ID: "a", Data: json.RawMessage(`{"text/plain":"help"}`)},
	} {
		want, _ := json.Marshal(ev)
		frame, err := ev.Frame()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(frame)
		if !bytes.Equal(got, want) {
			t.Errorf("%s frame:\n got %s\nwant %s", ev.Type, got, want)
		}
	}
}
