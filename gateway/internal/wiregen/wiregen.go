// Package wiregen generates, from the wire types of package api, the
// component schemas of gateway/openapi.json and the TypeScript
// declarations of the web notebook (web/types/wire.d.ts) and the
// TypeScript SDK (sdk/js/src/wire.ts). Descriptions come from the types'
// doc comments. `go generate ./gateway/` (make generate) writes the
// files; the gateway's tests regenerate them in memory and fail when a
// committed file is stale.
package wiregen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/glassroom/glassroom/api"
)

// The files it writes, relative to the module's root.
const (
	OpenAPIFile = "gateway/openapi.json"
	WebFile     = "web/types/wire.d.ts"
	SDKFile     = "sdk/js/src/wire.ts"
)

// ErrNoSchemas is the error of an OpenAPI document without a
// components.schemas object (or a hand-written schema).
var ErrNoSchemas = errors.New("wiregen: no components.schemas in the document")

// handWritten are the schemas of shapes with no Go type in api (the
// gateway writes them inline or passes the kernel's through); the
// generator keeps them as the document has them.
var handWritten = []string{"Error", "KernelInfo", "DirInfo", "Uploaded", "ContextList", "KernelList", "CommandList", "TemplateList"}

// roots are the generated schemas besides the frames, in the document's
// order; the named types they reference are added.
func roots() []named {
	return []named{
		{"Limits", reflect.TypeFor[api.Limits]()}, {"Network", reflect.TypeFor[api.Network]()},
		{"CreateSession", reflect.TypeFor[api.CreateSessionRequest]()}, {"UpdateSession", reflect.TypeFor[api.UpdateSessionRequest]()},
		{"Session", reflect.TypeFor[api.Session]()}, {"SessionList", reflect.TypeFor[api.SessionList]()},
		{"ExecuteRequest", reflect.TypeFor[api.ExecuteRequest]()}, {"Execution", reflect.TypeFor[api.Execution]()},
		{"CompleteRequest", reflect.TypeFor[api.IntrospectRequest]()}, {"InspectRequest", reflect.TypeFor[api.IntrospectRequest]()},
		{"Completion", reflect.TypeFor[api.Completion]()}, {"Inspection", reflect.TypeFor[api.Inspection]()},
		{"FileInfo", reflect.TypeFor[api.FileInfo]()}, {"UploadedFile", reflect.TypeFor[api.UploadedFile]()}, {"Listing", reflect.TypeFor[api.Listing]()}, {"Health", reflect.TypeFor[api.Health]()},
		{"Context", reflect.TypeFor[api.Context]()}, {"CreateContext", reflect.TypeFor[api.CreateContextRequest]()},
		{"Kernel", reflect.TypeFor[api.Kernel]()}, {"EditRequest", reflect.TypeFor[api.EditRequest]()}, {"EditResult", reflect.TypeFor[api.EditResult]()},
		{"RunCommand", reflect.TypeFor[api.RunCommandRequest]()}, {"CommandStdin", reflect.TypeFor[api.CommandStdinRequest]()},
		{"CommandInfo", reflect.TypeFor[api.CommandInfo]()}, {"Command", reflect.TypeFor[api.Command]()},
		{"CommandStarted", reflect.TypeFor[api.CommandStarted]()}, {"TerminalControl", reflect.TypeFor[api.TerminalControl]()},
		{"Template", reflect.TypeFor[api.Template]()}, {"Metrics", reflect.TypeFor[api.Metrics]()}, {"MetricsHistory", reflect.TypeFor[api.MetricsHistory]()},
		{"MoveFile", reflect.TypeFor[api.MoveFileRequest]()}, {"FileWatchEvent", reflect.TypeFor[api.FileEvent]()},
		{"WatchSyncRequest", reflect.TypeFor[api.WatchSyncRequest]()},
		{"FileURLRequest", reflect.TypeFor[api.FileURLRequest]()}, {"FileURL", reflect.TypeFor[api.FileURL]()},
		{"PreviewRequest", reflect.TypeFor[api.PreviewRequest]()}, {"Preview", reflect.TypeFor[api.Preview]()},
		{"Port", reflect.TypeFor[api.Port]()}, {"PortList", reflect.TypeFor[api.PortList]()},
		{"CreateVolumeRequest", reflect.TypeFor[api.CreateVolumeRequest]()}, {"Volume", reflect.TypeFor[api.Volume]()},
		{"VolumeList", reflect.TypeFor[api.VolumeList]()},
		{"TerminalSize", reflect.TypeFor[api.TerminalSize]()},
		{"Snapshot", reflect.TypeFor[api.Snapshot]()}, {"SnapshotList", reflect.TypeFor[api.SnapshotList]()},
		{"ForkRequest", reflect.TypeFor[api.ForkRequest]()}, {"ForkResult", reflect.TypeFor[api.ForkResult]()},
		{"PauseRequest", reflect.TypeFor[api.PauseRequest]()}, {"CreateSnapshotRequest", reflect.TypeFor[api.CreateSnapshotRequest]()},
	}
}

// outputTypes are the frames an Execution's outputs hold.
var outputTypes = []api.EventType{api.EventStream, api.EventDisplay, api.EventUpdateDisplay, api.EventClearOutput, api.EventResult,
	api.EventError, api.EventFile, api.EventPage, api.EventSetNextInput, api.EventAskExit}

// renamed are the schema names that are not their Go type's name.
var renamed = map[reflect.Type]string{
	reflect.TypeFor[api.FileChangeEvent]():      "FileEvent",
	reflect.TypeFor[api.FileEvent]():            "FileWatchEvent",
	reflect.TypeFor[api.CreateSessionRequest](): "CreateSession",
	reflect.TypeFor[api.UpdateSessionRequest](): "UpdateSession",
	reflect.TypeFor[api.CreateContextRequest](): "CreateContext",
	reflect.TypeFor[api.RunCommandRequest]():    "RunCommand",
	reflect.TypeFor[api.CommandStdinRequest]():  "CommandStdin",
	reflect.TypeFor[api.MoveFileRequest]():      "MoveFile",
	reflect.TypeFor[api.Bundle]():               "MIMEBundle",
	reflect.TypeFor[api.Event]():                "OutputEvent", // only in Execution.outputs
}

type named struct {
	name string
	typ  reflect.Type
}

// gen builds the schemas and declarations of one run.
type gen struct {
	docs   map[string]string // "Type" and "Type.Field" → doc comment
	order  []string          // schema names, in order
	types  map[string]reflect.Type
	consts map[reflect.Type]string // a frame's type field
}

// newGen reads the doc comments of package api's source in apiDir.
func newGen(apiDir string) (*gen, error) {
	g := &gen{docs: map[string]string{}, types: map[string]reflect.Type{}, consts: map[reflect.Type]string{}}
	files, err := filepath.Glob(filepath.Join(apiDir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("wiregen: %w", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("wiregen: %w", err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil {
					doc = gd.Doc
				}
				g.docs[ts.Name.Name] = text(doc)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					d := strings.TrimSpace(text(fl.Doc) + " " + text(fl.Comment))
					for _, n := range fl.Names {
						g.docs[ts.Name.Name+"."+n.Name] = d
					}
				}
			}
		}
	}
	for _, f := range api.ServerFrames() {
		g.consts[reflect.TypeOf(f)] = string(f.FrameType())
	}
	for _, f := range api.ClientFrames() {
		g.consts[reflect.TypeOf(f)] = f.ClientFrameType()
	}
	return g, nil
}

// text is a comment group as one line.
func text(c *ast.CommentGroup) string {
	if c == nil {
		return ""
	}
	return strings.Join(strings.Fields(c.Text()), " ")
}

func (g *gen) add(name string, t reflect.Type) {
	if _, ok := g.types[name]; ok {
		return
	}
	g.types[name] = t
	g.order = append(g.order, name)
}

// all lists the generated schemas: the roots, the frames, then the
// named types they reference.
func (g *gen) all() {
	for _, r := range roots() {
		g.add(r.name, r.typ)
	}
	for _, f := range api.ServerFrames() {
		g.add(g.nameOf(reflect.TypeOf(f)), reflect.TypeOf(f))
	}
	for _, f := range api.ClientFrames() {
		g.add(g.nameOf(reflect.TypeOf(f)), reflect.TypeOf(f))
	}
	for i := 0; i < len(g.order); i++ { // the closure over referenced types
		t := g.types[g.order[i]]
		if t.Kind() != reflect.Struct {
			continue
		}
		for _, f := range fields(t) {
			for _, ref := range referenced(f.Type) {
				g.add(g.nameOf(ref), ref)
			}
		}
	}
}

func (g *gen) nameOf(t reflect.Type) string {
	if n, ok := renamed[t]; ok {
		return n
	}
	return t.Name()
}

// referenced are the named struct types a field's type refers to.
func referenced(t reflect.Type) []reflect.Type {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if t == reflect.TypeFor[api.Bundle]() || t == reflect.TypeFor[json.RawMessage]() {
			return nil
		}
		return referenced(t.Elem())
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() || t == reflect.TypeFor[api.Event]() {
			return nil
		}
		return []reflect.Type{t}
	}
	return nil
}

// field is one JSON field of a struct, embedded structs flattened.
type field struct {
	json      string
	omitempty bool
	owner     string // the Go type that declares it
	name      string
	Type      reflect.Type
}

func fields(t reflect.Type) []field {
	var out []field
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		owner := t
		if len(f.Index) > 1 {
			owner = t.FieldByIndex(f.Index[:len(f.Index)-1]).Type
		}
		out = append(out, field{json: name, omitempty: strings.Contains(opts, "omitempty"), owner: owner.Name(), name: f.Name, Type: f.Type})
	}
	return out
}

// nullable: the field's value may be written as null.
func nullable(f field) bool {
	if f.omitempty {
		return false
	}
	switch f.Type.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return f.Type != reflect.TypeFor[json.RawMessage]() // any JSON already
	}
	return false
}

// Files returns every generated file's content by its path relative to
// root (the module's root), the OpenAPI document built on the committed
// one (its paths and hand-written schemas are kept).
func Files(root string) (map[string][]byte, error) {
	g, err := newGen(filepath.Join(root, "api"))
	if err != nil {
		return nil, err
	}
	g.all()
	doc, err := os.ReadFile(filepath.Join(root, OpenAPIFile))
	if err != nil {
		return nil, fmt.Errorf("wiregen: %w", err)
	}
	if doc, err = g.openAPI(doc); err != nil {
		return nil, err
	}
	ts := g.typeScript()
	return map[string][]byte{
		OpenAPIFile: doc,
		WebFile:     ts,
		SDKFile:     ts,
	}, nil
}

// Root finds the module's root from dir (the directory with go.mod).
func Root(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("wiregen: %w", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("wiregen: no go.mod above %s: %w", dir, os.ErrNotExist)
		}
	}
}

// obj is a JSON object that keeps its keys' order.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func ref(name string) obj { return obj{{"$ref", "#/components/schemas/" + name}} }

// schemaOf is the JSON Schema of a value of type t.
func (g *gen) schemaOf(t reflect.Type) obj {
	switch t {
	case reflect.TypeFor[json.RawMessage]():
		return obj{}
	case reflect.TypeFor[time.Time]():
		return obj{{"type", "string"}, {"format", "date-time"}}
	case reflect.TypeFor[[]byte]():
		return obj{{"type", "string"}, {"contentEncoding", "base64"}}
	}
	if n, ok := renamed[t]; ok && (t.Kind() != reflect.Struct || g.types[n] != nil) {
		return ref(n)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schemaOf(t.Elem())
	case reflect.String:
		return obj{{"type", "string"}}
	case reflect.Bool:
		return obj{{"type", "boolean"}}
	case reflect.Int, reflect.Int64:
		return obj{{"type", "integer"}}
	case reflect.Float64:
		return obj{{"type", "number"}}
	case reflect.Slice:
		return obj{{"type", "array"}, {"items", g.schemaOf(t.Elem())}}
	case reflect.Map:
		return obj{{"type", "object"}, {"additionalProperties", g.schemaOf(t.Elem())}}
	case reflect.Interface:
		return obj{}
	case reflect.Struct:
		return ref(g.nameOf(t))
	}
	panic("wiregen: no schema for " + t.String())
}

// withNull lets s also be null.
func withNull(s obj) obj {
	if len(s) > 0 && s[0].k == "type" {
		if t, ok := s[0].v.(string); ok {
			out := slices.Clone(s)
			out[0].v = []string{t, "null"}
			return out
		}
	}
	return obj{{"anyOf", []any{s, obj{{"type", "null"}}}}}
}

func (g *gen) structSchema(name string, t reflect.Type) obj {
	s := obj{{"type", "object"}}
	if d := g.docs[t.Name()]; d != "" {
		s = append(s, kv{"description", d})
	}
	props := obj{}
	var required []string
	for _, f := range fields(t) {
		var p obj
		if c, ok := g.consts[t]; ok && f.json == "type" {
			p = obj{{"type", "string"}, {"const", c}}
		} else {
			p = g.schemaOf(f.Type)
			if nullable(f) {
				p = withNull(p)
			}
		}
		if d := g.docs[f.owner+"."+f.name]; d != "" {
			p = append(p, kv{"description", d})
		}
		props = append(props, kv{f.json, p})
		if !f.omitempty {
			required = append(required, f.json)
		}
	}
	s = append(s, kv{"properties", props})
	if len(required) > 0 {
		s = append(s, kv{"required", required})
	}
	return append(s, kv{"additionalProperties", false})
}

func union(description string, names, types []string) obj {
	var one []any
	mapping := obj{}
	for i, n := range names {
		one = append(one, ref(n))
		mapping = append(mapping, kv{types[i], "#/components/schemas/" + n})
	}
	return obj{{"description", description}, {"oneOf", one}, {"discriminator", obj{{"propertyName", "type"}, {"mapping", mapping}}}}
}

// unions are the frame unions: name, description, members and their types.
func (g *gen) unions() []struct {
	name, doc     string
	names, consts []string
} {
	type u = struct {
		name, doc     string
		names, consts []string
	}
	var server, output, client u
	server = u{name: "ServerFrame", doc: "A WebSocket text frame from the server (JSON)"}
	output = u{name: "OutputEvent", doc: "An output event of an execution (file events also appear in files)"}
	client = u{name: "ClientFrame", doc: "A WebSocket text frame from the client (JSON)"}
	for _, f := range api.ServerFrames() {
		n := g.nameOf(reflect.TypeOf(f))
		server.names, server.consts = append(server.names, n), append(server.consts, string(f.FrameType()))
		if slices.Contains(outputTypes, f.FrameType()) {
			output.names, output.consts = append(output.names, n), append(output.consts, string(f.FrameType()))
		}
	}
	for _, f := range api.ClientFrames() {
		client.names, client.consts = append(client.names, g.nameOf(reflect.TypeOf(f))), append(client.consts, f.ClientFrameType())
	}
	return []u{output, server, client}
}

// openAPI returns doc with its components.schemas regenerated: the
// generated ones and the hand-written ones, in the document's order, new
// ones at the end. The rest of the document is kept byte for byte.
func (g *gen) openAPI(doc []byte) ([]byte, error) {
	start, end, err := schemasSpan(doc)
	if err != nil {
		return nil, err
	}
	var old map[string]json.RawMessage
	if err := json.Unmarshal(doc[start:end], &old); err != nil {
		return nil, fmt.Errorf("wiregen: components.schemas: %w", err)
	}
	made := map[string]any{}
	for _, n := range g.order {
		t := g.types[n]
		if t.Kind() == reflect.Struct {
			made[n] = g.structSchema(n, t)
		}
	}
	made["MIMEBundle"] = obj{{"type", "object"}, {"additionalProperties", true}, {"description", g.docs["Bundle"]}}
	for _, u := range g.unions() {
		made[u.name] = union(u.doc, u.names, u.consts)
	}
	for _, n := range handWritten {
		if old[n] == nil {
			return nil, fmt.Errorf("wiregen: the hand-written schema %s is missing: %w", n, ErrNoSchemas)
		}
		made[n] = old[n]
	}
	var names []string
	for _, n := range keyOrder(doc[start:end]) {
		if made[n] != nil {
			names = append(names, n)
		}
	}
	var added []string
	for n := range made {
		if !slices.Contains(names, n) {
			added = append(added, n)
		}
	}
	slices.Sort(added)
	out := obj{}
	for _, n := range append(names, added...) {
		out = append(out, kv{n, made[n]})
	}
	body, err := json.MarshalIndent(out, "    ", "  ")
	if err != nil {
		return nil, fmt.Errorf("wiregen: %w", err)
	}
	body = bytes.ReplaceAll(body, []byte(`\u003c`), []byte("<"))
	body = bytes.ReplaceAll(body, []byte(`\u003e`), []byte(">"))
	body = bytes.ReplaceAll(body, []byte(`\u0026`), []byte("&"))
	return slices.Concat(doc[:start], body, doc[end:]), nil
}

// schemasSpan finds the byte span of components.schemas' value in doc
// (formatted with two-space indents, as the generator writes it).
func schemasSpan(doc []byte) (int, int, error) {
	c := bytes.Index(doc, []byte("\n  \"components\": {"))
	if c < 0 {
		return 0, 0, ErrNoSchemas
	}
	key := []byte("\n    \"schemas\": ")
	i := bytes.Index(doc[c:], key)
	if i < 0 {
		return 0, 0, ErrNoSchemas
	}
	start := c + i + len(key)
	dec := json.NewDecoder(bytes.NewReader(doc[start:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, 0, fmt.Errorf("wiregen: components.schemas: %w", err)
	}
	return start, start + int(dec.InputOffset()), nil
}

// keyOrder lists a JSON object's keys in order.
func keyOrder(object []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(object))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}
