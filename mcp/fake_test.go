package mcp_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// fakeBackend answers with canned executions and files; it records what
// the tools asked for.
type fakeBackend struct {
	exec     *client.Execution
	files    map[string][]byte
	created  int
	deleted  []string
	written  map[string][]byte
	editErrs map[string]error
}

func (f *fakeBackend) CreateSession(context.Context, client.CreateOptions) (*client.Session, error) {
	f.created++
	return &client.Session{ID: fmt.Sprintf("sess-%d", f.created)}, nil
}
func (f *fakeBackend) DeleteSession(_ context.Context, id string) error {
	f.deleted = append(f.deleted, id)
	return nil
}
func (f *fakeBackend) Execute(context.Context, string, string, client.ExecuteOptions) (*client.Execution, error) {
	return f.exec, nil
}
func (f *fakeBackend) Kernels(context.Context) ([]client.Kernel, error) {
	return []client.Kernel{{Name: "python3", Language: "python", DisplayName: "Python 3", Aliases: []string{"python", "py"}}}, nil
}
func (f *fakeBackend) Contexts(context.Context, string) ([]client.Context, error) {
	return []client.Context{{ID: client.FirstContext, Language: "python3", Default: true}}, nil
}
func (f *fakeBackend) RestartContext(context.Context, string, string) error { return nil }
func (f *fakeBackend) WriteFile(_ context.Context, _, path string, r io.Reader, size int64) (*client.FileInfo, error) {
	b, _ := io.ReadAll(r)
	if f.written == nil {
		f.written = map[string][]byte{}
	}
	f.written[path] = b
	return &client.FileInfo{Path: path, Size: int64(len(b))}, nil
}
func (f *fakeBackend) ReadFile(_ context.Context, _, path string) (*client.File, error) {
	b, ok := f.files[path]
	if !ok {
		return nil, &client.APIError{Status: 404, Code: "file_not_found", Message: "no such file"}
	}
	return &client.File{ReadCloser: io.NopCloser(bytes.NewReader(b)), Size: int64(len(b))}, nil
}
func (f *fakeBackend) CreateSnapshot(context.Context, string, string) (*client.Snapshot, error) {
	return nil, &client.APIError{Status: 501, Code: "no_snapshots", Message: "none"}
}
func (f *fakeBackend) ForkSession(context.Context, string, int) ([]client.Fork, error) {
	return nil, &client.APIError{Status: 501, Code: "no_snapshots", Message: "none"}
}
func (f *fakeBackend) ListFiles(context.Context, string, string) (*client.Listing, error) {
	return &client.Listing{Entries: []client.FileEntry{{Name: "a", Path: "a", Type: "dir"}}}, nil
}

func (f *fakeBackend) EditFile(_ context.Context, _, path string, req client.EditRequest) (*client.EditResult, error) {
	if err, ok := f.editErrs[path]; ok {
		return nil, err
	}
	b := f.files[path]
	return &client.EditResult{Path: path, Command: req.Command, Size: int64(len(b)), Lines: strings.Count(string(b), "\n"), Text: string(b), StartLine: 1, EndLine: strings.Count(string(b), "\n")}, nil
}

func fakeSession(t *testing.T, f *fakeBackend, cfg mcp.Config) (*mcp.Server, *sdk.ClientSession) {
	srv, err := mcp.New(f, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := sdk.NewInMemoryTransports()
	done := make(chan struct{})
	go func() { srv.Run(ctx, st); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv, connect(t, context.Background(), ct)
}

func bundle(m map[string]any) client.Bundle {
	b, _ := json.Marshal(m)
	return b
}

func pngB64(n int) string {
	raw := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, n)...)
	return base64.StdEncoding.EncodeToString(raw)
}

func TestOutputIsSizedForAModel(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	color := "\x1b[0;31mZeroDivisionError\x1b[0m"
	f := &fakeBackend{exec: &client.Execution{
		Status: "error", ExecutionCount: 7, DurationMS: 3, StateLost: true,
		Outputs: []client.Event{
			{Type: client.EventStream, Name: "stdout", Text: "dropped by clear_output\n"},
			{Type: client.EventClearOutput},
			{Type: client.EventStream, Name: "stdout", Text: "head " + strings.Repeat("é", 50000) + " tail\n"},
			{Type: client.EventStream, Name: "stderr", Text: "\x1b[1mwarn\x1b[0m\n"},
			{Type: client.EventDisplay, Data: bundle(map[string]any{"image/png": pngB64(10), "text/plain": "<Figure>"})},
			{Type: client.EventDisplay, Data: bundle(map[string]any{"image/png": pngB64(10)})},
			{Type: client.EventDisplay, Data: bundle(map[string]any{"image/png": pngB64(10)})},
			{Type: client.EventDisplay, Data: bundle(map[string]any{"image/png": pngB64(5000)})},
			{Type: client.EventDisplay, Data: bundle(map[string]any{"text/html": "<b>only html</b>"})},
			{Type: client.EventDisplay, Data: bundle(map[string]any{"application/x-custom": "?"})},
			{Type: client.EventResult, ExecutionCount: 7, Data: bundle(map[string]any{"text/plain": "'res'"})},
			{Type: client.EventError, Name: "ZeroDivisionError", Value: "division by zero", Traceback: []string{color, "\x1b]8;;file://x\x07link\x1b]8;;\x07"}},
		},
		Files: []client.FileChange{{Path: "out.png", Size: 2048, Change: "created"}},
	}}
	_, cs := fakeSession(t, f, mcp.Config{MaxTextChars: 5000, MaxImages: 2, MaxImageBytes: 1000})
	res := call(t, ctx, cs, "execute_python", map[string]any{"code": "whatever"})
	text := textOf(res)
	n := utf8.RuneCountInString(text)
	for _, want := range []string{
		"Started a new Python session, session_id \"sess-1\"", "earlier output was cleared", "stdout:\nhead ééé", "é tail",
		"[output truncated: ", "stderr:\nwarn", "[image 1: image/png", "[image 2: image/png", "not returned: over this tool's image limits",
		"display: (text/html)\n<b>only html</b>", "application/x-custom not shown", "result (Out[7]):\n'res'",
		"error: ZeroDivisionError: division by zero", "status: error (execution 7, 3 ms)", "variables were lost", "out.png (created, 2.0 KiB)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Contains(text, "dropped by clear_output") || strings.Contains(text, "\x1b") || n > 5000 || n < 3000 {
		t.Errorf("%d characters:\n%s", n, text)
	}
	if imgs := imagesOf(res); len(imgs) != 2 || !res.IsError {
		t.Errorf("images %d, isError %v", len(imgs), res.IsError)
	}
	if out := res.StructuredContent.(map[string]any); out["session_id"] != "sess-1" || out["status"] != "error" || out["execution_count"] != 7.0 {
		t.Errorf("structured %+v", out)
	}
}

func TestFileTools(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	pngRaw, _ := base64.StdEncoding.DecodeString(pngB64(20))
	f := &fakeBackend{files: map[string][]byte{
		"big.txt":      []byte(strings.Repeat("line\n", 10000)),
		"blob.bin":     {0, 1, 2, 3},
		"noext":        pngRaw, // sniffed as PNG
		"huge.png":     append(pngRaw, make([]byte, 5000)...),
		"bad-utf8.txt": {0xff, 0xfe, 'a'},
	}}
	srv, cs := fakeSession(t, f, mcp.Config{MaxTextChars: 2000, MaxImageBytes: 1000, MaxUploadBytes: 100})
	if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": "s", "path": "big.txt"}); utf8.RuneCountInString(textOf(r)) > 2000 || !strings.Contains(textOf(r), "[output truncated: the file has 48.8 KiB") {
		t.Errorf("big text: %d %q", len(textOf(r)), textOf(r)[len(textOf(r))-100:])
	}
	if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": "s", "path": "blob.bin"}); !strings.Contains(textOf(r), "binary file") || len(imagesOf(r)) != 0 {
		t.Errorf("binary: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": "s", "path": "bad-utf8.txt"}); !strings.Contains(textOf(r), "binary file") {
		t.Errorf("invalid UTF-8: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": "s", "path": "noext"}); len(imagesOf(r)) != 1 || imagesOf(r)[0].MIMEType != "image/png" {
		t.Errorf("sniffed png: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": "s", "path": "huge.png"}); !r.IsError || !strings.Contains(textOf(r), "Shrink it") {
		t.Errorf("huge png: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": "s", "path": "nope"}); !r.IsError || !strings.Contains(textOf(r), "list_files shows") {
		t.Errorf("missing: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "read_file", map[string]any{"session_id": " ", "path": "x"}); !r.IsError || !strings.Contains(textOf(r), "session_id is required") {
		t.Errorf("no session: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "upload_file", map[string]any{"path": "x.bin", "content": "!!!", "encoding": "base64"}); !r.IsError || !strings.Contains(textOf(r), "not valid base64") {
		t.Errorf("bad base64: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "upload_file", map[string]any{"path": "x.txt", "content": strings.Repeat("x", 101)}); !r.IsError || !strings.Contains(textOf(r), "at most 100") {
		t.Errorf("too big: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "upload_file", map[string]any{"path": "x.txt", "content": "hi", "encoding": "rot13"}); !r.IsError {
		t.Errorf("bad encoding accepted: %q", textOf(r))
	}
	if r := call(t, ctx, cs, "upload_file", map[string]any{"path": "d/x.bin", "content": "AAEC\nAw", "encoding": "base64"}); r.IsError || !bytes.Equal(f.written["d/x.bin"], []byte{0, 1, 2, 3}) {
		t.Errorf("upload: %q %v", textOf(r), f.written)
	}
	if r := call(t, ctx, cs, "execute_python", map[string]any{"code": "1", "timeout_s": -1}); !r.IsError {
		t.Errorf("negative timeout accepted: %q", textOf(r))
	}
	// The upload without session_id started one; closing the server's
	// sessions deletes it, and only it.
	if got := srv.CreatedSessions(); len(got) != 1 {
		t.Fatalf("created %v", got)
	}
	if err := srv.CloseCreatedSessions(ctx); err != nil || len(f.deleted) != 1 || f.deleted[0] != "sess-1" {
		t.Fatalf("close created: %v %v", err, f.deleted)
	}
}

// TestStdioClosesItsSessions: when the client goes away, `glassroom mcp`
// deletes the sessions it started (nobody else knows their ids).
func TestStdioClosesItsSessions(t *testing.T) {
	g := apptest.Start(t, apptest.Local(t), apptest.Options{})
	ctx := ctxT(t, 2*time.Minute)
	cmd := exec.Command(binary, "mcp", "--url", g.URL, "--api-key", apptest.KeyA, "--log-level", "warn")
	cmd.Stderr = os.Stderr
	c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	call(t, ctx, cs, "execute_python", map[string]any{"code": "1"})
	gc := g.Client(t, apptest.KeyA)
	if l, _ := gc.ListSessions(ctx); len(l) != 1 {
		t.Fatalf("sessions %+v", l)
	}
	cs.Close() // closes stdin and waits for the process
	if l, err := gc.ListSessions(ctx); err != nil || len(l) != 0 {
		t.Fatalf("sessions left behind: %+v %v", l, err)
	}
}

func (f *fakeBackend) RunCommand(context.Context, string, string, client.CommandOptions) (*client.Command, error) {
	return nil, errors.New("the fake runs no commands")
}

func (f *fakeBackend) StartCommand(context.Context, string, string, client.CommandOptions) (*client.CommandHandle, error) {
	return nil, errors.New("the fake runs no commands")
}

func (f *fakeBackend) ListSessions(context.Context) ([]client.Session, error) { return nil, nil }

func (f *fakeBackend) Interrupt(context.Context, string) error { return nil }

func (f *fakeBackend) InterruptContext(context.Context, string, string) error { return nil }

func (f *fakeBackend) Ports(context.Context, string) ([]client.Port, error) {
	return []client.Port{{Port: 5000, Address: "0.0.0.0"}}, nil
}

func (f *fakeBackend) Preview(_ context.Context, id string, port int, _ time.Duration) (*client.Preview, error) {
	host := fmt.Sprintf("%d-%s-tag.localhost:8890", port, id)
	return &client.Preview{Port: port, Host: host, URL: fmt.Sprintf("http://%d-%s.localhost:8890/?glassroom_preview_token=t", port, id), Token: "t",
		ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
}
