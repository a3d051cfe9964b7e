package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// tools implements the tool handlers over one backend.
type tools struct {
	b   Backend
	cfg Config
	log zerolog.Logger

	mu      sync.Mutex
	created map[string]bool // sessions started by these tools and not closed
}

type executeInput struct {
	Code      string  `json:"code" jsonschema:"Python source to run. It may span many lines; the value of the last expression is returned, as in a notebook cell."`
	SessionID string  `json:"session_id,omitempty" jsonschema:"Session to run in (from an earlier answer). Omit it to start a new session."`
	TimeoutS  float64 `json:"timeout_s,omitempty" jsonschema:"Seconds the code may run before it is interrupted (default: the gateway's, usually 60)."`
}

type executeCodeInput struct {
	Code      string            `json:"code" jsonschema:"Source code to run, in the language given. It may span many lines; as in a notebook cell, the value of the last expression is returned where the language has one (Python, R, JavaScript, TypeScript)."`
	Language  string            `json:"language,omitempty" jsonschema:"The code's language: python (default), r, javascript (js), typescript (ts) or bash; list_languages says which this gateway runs. Each language has its own kernel in the session, with its own variables; all share the session's files."`
	Context   string            `json:"context,omitempty" jsonschema:"A context id of the session (a kernel made by another client of the gateway; 'default' is the session's first kernel). Omit it: the code runs in its language's kernel."`
	SessionID string            `json:"session_id,omitempty" jsonschema:"Session to run in (from an earlier answer). Omit it to start a new session."`
	TimeoutS  float64           `json:"timeout_s,omitempty" jsonschema:"Seconds the code may run before it is interrupted (default: the gateway's, usually 60)."`
	Envs      map[string]string `json:"envs,omitempty" jsonschema:"Environment variables for this call only (NAME: value): the code and the programs it starts see them; the next call does not. Names the sandbox reserves (PATH, HOME, LD_*, PYTHON*, ...) are refused."`
	Cwd       string            `json:"cwd,omitempty" jsonschema:"Working directory for this call only: a directory of the workspace (relative to /home/user, or absolute under it) that must exist. The next call is back in the previous directory."`
}

// ExecuteOutput is execute_python's and execute_code's structured output.
type ExecuteOutput struct {
	SessionID      string `json:"session_id" jsonschema:"the session the code ran in; pass it to later calls"`
	SessionCreated bool   `json:"session_created" jsonschema:"whether this call started the session"`
	Status         string `json:"status" jsonschema:"ok, error, timeout, interrupted or died"`
	ExecutionCount int    `json:"execution_count" jsonschema:"the kernel's execution counter"`
	Language       string `json:"language,omitempty" jsonschema:"the language the code ran in, as asked (execute_code)"`
}

type uploadInput struct {
	Path      string `json:"path" jsonschema:"Where to store the file, relative to the workspace (e.g. data/sales.csv); parent directories are created."`
	Content   string `json:"content" jsonschema:"The file's content: plain text, or base64 when encoding is base64."`
	Encoding  string `json:"encoding,omitempty" jsonschema:"text (default) or base64 (for binary files)."`
	SessionID string `json:"session_id,omitempty" jsonschema:"Session whose workspace receives the file. Omit it to start a new session."`
}

type fileInput struct {
	SessionID string `json:"session_id" jsonschema:"The session (from execute_python's answer)."`
	Path      string `json:"path" jsonschema:"File path relative to the workspace, e.g. results/chart.png."`
}

type listInput struct {
	SessionID string `json:"session_id" jsonschema:"The session (from execute_python's answer)."`
	Path      string `json:"path,omitempty" jsonschema:"Directory relative to the workspace (default: the workspace root)."`
}

type editInput struct {
	SessionID  string  `json:"session_id,omitempty" jsonschema:"The session (from execute_python's answer). Only create may omit it, to start a new session."`
	Command    string  `json:"command" jsonschema:"view, create, str_replace or insert."`
	Path       string  `json:"path" jsonschema:"File path relative to the workspace (or absolute under /home/user), e.g. src/app.py."`
	ViewRange  []int   `json:"view_range,omitempty" jsonschema:"view: [start, end], the lines to show (from 1; end -1 for the end of the file). Omit it to see the whole file."`
	FileText   *string `json:"file_text,omitempty" jsonschema:"create: the content of the file."`
	OldStr     *string `json:"old_str,omitempty" jsonschema:"str_replace: the exact text to replace. It must occur exactly once in the file, whitespace and indentation included."`
	NewStr     *string `json:"new_str,omitempty" jsonschema:"str_replace: the text that replaces old_str (omit it to delete old_str). insert: the text to insert."`
	InsertLine *int    `json:"insert_line,omitempty" jsonschema:"insert: the line after which new_str is inserted; 0 for the top of the file."`
}

type sessionInput struct {
	SessionID string `json:"session_id" jsonschema:"The session (from execute_python's answer)."`
}

type restartInput struct {
	SessionID string `json:"session_id" jsonschema:"The session (from execute_python's answer)."`
	Language  string `json:"language,omitempty" jsonschema:"Restart only the kernels of this language (python, r, javascript, typescript, bash, java). Omit it to restart every kernel of the session."`
}

type noInput struct{}

type commandInput struct {
	Cmd        string            `json:"cmd" jsonschema:"The shell command, run as bash -c cmd without start-up files (pipes, redirections, && and the like work)."`
	Cwd        string            `json:"cwd,omitempty" jsonschema:"Working directory, relative to the workspace (/home/user) or absolute under it (default: the workspace)."`
	Envs       map[string]string `json:"envs,omitempty" jsonschema:"Environment variables for this command only."`
	TimeoutS   float64           `json:"timeout_s,omitempty" jsonschema:"Seconds the command may run before it is killed (default: the gateway's, usually 60)."`
	Background bool              `json:"background,omitempty" jsonschema:"Start it and return at once with its pid (for servers and long jobs); it runs until it ends or the session does."`
	SessionID  string            `json:"session_id,omitempty" jsonschema:"Session to run in (from an earlier answer). Omit it to start a new session."`
}

// CommandOutput is run_command's structured output.
type CommandOutput struct {
	SessionID      string `json:"session_id" jsonschema:"the session the command ran in; pass it to later calls"`
	SessionCreated bool   `json:"session_created" jsonschema:"whether this call started the session"`
	PID            int    `json:"pid" jsonschema:"the command's number in the session"`
	ExitCode       *int   `json:"exit_code,omitempty" jsonschema:"its exit code (-1: killed at its timeout); absent for a background command"`
}

func (t *tools) register(s *sdk.Server) {
	execSchema := t.codeSchema(mustSchema[executeInput]())
	sdk.AddTool(s, &sdk.Tool{
		Name:  "execute_python",
		Title: "Run Python",
		Description: "Run Python code in a persistent, sandboxed Jupyter (IPython) kernel and get back its output. " +
			"Variables, imports and files persist between calls that pass the same session_id; without session_id a new " +
			"session is started and its id is given in the answer: pass it on every later call. The answer has print() output " +
			"(stdout, stderr), the value of the last expression, and errors with their traceback, as text; matplotlib figures " +
			"(plt.show()) and other image outputs come back as images. numpy, pandas and matplotlib are installed. " + networkSentence(t.cfg.Network) + " " +
			"While it runs, output is sent as progress notifications (when the call has a progress token) and stderr as log messages; " +
			"cancelling the call interrupts the code, and the session keeps its variables. The working directory is the session's workspace (see upload_file, read_file, list_files). " +
			"input() is not available. Long output is cut to its beginning and end.",
		InputSchema: execSchema,
		Annotations: &sdk.ToolAnnotations{Title: "Run Python", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
	}, t.execute)

	codeSchema := t.codeSchema(mustSchema[executeCodeInput]())
	codeSchema.Properties["language"].Examples = languageExamples()
	codeSchema.Properties["language"].Description = "The code's language: " + languageChoices() + "; list_languages says which this gateway runs. " +
		"Each language has its own kernel in the session, with its own variables; all share the session's files."
	sdk.AddTool(s, &sdk.Tool{
		Name:  "execute_code",
		Title: "Run code",
		Description: "Run code in " + languageNames() + " in a persistent, sandboxed Jupyter kernel and get back its output. " +
			"A session holds one kernel per language, started on its first use: variables persist per language between calls that pass " +
			"the same session_id, and every language sees the same workspace files (the working directory, /home/user). Without " +
			"session_id a new session is started and its id is given in the answer: pass it on every later call. The answer has " +
			"stdout, stderr, the value of the last expression, and errors, as text; plots (matplotlib, R graphics) come back as images. " +
			"Python has numpy, pandas and matplotlib; R has ggplot2, dplyr, tidyr, readr and data.table. " + networkSentence(t.cfg.Network) + " " +
			"While it runs, output is sent as progress notifications (when the call has a progress token) and stderr as log messages; " +
			"cancelling the call interrupts the code, and the session keeps its variables. " +
			"list_languages says which languages this gateway runs. Long output is cut to its beginning and end.",
		InputSchema: codeSchema,
		Annotations: &sdk.ToolAnnotations{Title: "Run code", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
	}, t.executeCode)

	sdk.AddTool(s, &sdk.Tool{
		Name:        "list_languages",
		Title:       "List languages",
		Description: "List the languages execute_code runs on this gateway: each one's name, the names it also answers to, and its kernel.",
		InputSchema: mustSchema[noInput](),
		Annotations: &sdk.ToolAnnotations{Title: "List languages", ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.languages)

	uploadSchema := mustSchema[uploadInput]()
	uploadSchema.Properties["encoding"].Enum = []any{"text", "base64"}
	uploadSchema.Properties["path"].MinLength = jsonschema.Ptr(1)
	sdk.AddTool(s, &sdk.Tool{
		Name:  "upload_file",
		Title: "Upload a file",
		Description: "Write a file into a session's workspace, where the Python code can open it by its relative path " +
			"(e.g. pd.read_csv('data/sales.csv')). Text is written as UTF-8; send binary files base64-encoded with " +
			"encoding=base64. An existing file is replaced. Without session_id a new session is started.",
		InputSchema: uploadSchema,
		Annotations: &sdk.ToolAnnotations{Title: "Upload a file", DestructiveHint: jsonschema.Ptr(true), IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.upload)

	readSchema := mustSchema[fileInput]()
	sdk.AddTool(s, &sdk.Tool{
		Name:  "read_file",
		Title: "Read a file",
		Description: "Read a file from a session's workspace: text files come back as text (long ones cut), images " +
			"(PNG, JPEG, GIF, WebP) as images, other binary files as an embedded resource (base64 blob with its MIME type), " +
			"up to a size limit. The same files are MCP resources: glassroom://sessions/{session_id}/files/{path}.",
		InputSchema: readSchema,
		Annotations: &sdk.ToolAnnotations{Title: "Read a file", ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.read)

	sdk.AddTool(s, &sdk.Tool{
		Name:        "list_files",
		Title:       "List files",
		Description: "List a directory of a session's workspace: each entry's type, size, modification time and path.",
		InputSchema: mustSchema[listInput](),
		Annotations: &sdk.ToolAnnotations{Title: "List files", ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.list)

	editSchema := mustSchema[editInput]()
	editSchema.Properties["command"].Enum = []any{"view", "create", "str_replace", "insert"}
	editSchema.Properties["path"].MinLength = jsonschema.Ptr(1)
	editSchema.Properties["view_range"].MinItems = jsonschema.Ptr(2)
	editSchema.Properties["view_range"].MaxItems = jsonschema.Ptr(2)
	sdk.AddTool(s, &sdk.Tool{
		Name:  "edit_file",
		Title: "View or edit a text file",
		Description: "View, create and edit UTF-8 text files in a session's workspace, as with a text editor. command=view shows the " +
			"file with line numbers (view_range [start, end] for part of it; a directory is listed). command=create writes file_text " +
			"to a new file, or replaces an existing one. command=str_replace replaces old_str with new_str: old_str must occur exactly " +
			"once in the file, character for character (whitespace and indentation included); include a few surrounding lines to make " +
			"it unique; with zero or several matches nothing changes and the error says how many and where. command=insert puts new_str " +
			"after line insert_line (0 for the top). Edits are atomic: the code sees the old file or the new one. For binary files or " +
			"bulk changes use execute_python. Without session_id, create starts a new session.",
		InputSchema: editSchema,
		Annotations: &sdk.ToolAnnotations{Title: "View or edit a text file", DestructiveHint: jsonschema.Ptr(true), OpenWorldHint: jsonschema.Ptr(false)},
	}, t.edit)

	cmdSchema := mustSchema[commandInput]()
	cmdSchema.Properties["timeout_s"].ExclusiveMinimum = jsonschema.Ptr(0.0)
	cmdSchema.Properties["cmd"].MinLength = jsonschema.Ptr(1)
	sdk.AddTool(s, &sdk.Tool{
		Name:  "run_command",
		Title: "Run a shell command",
		Description: "Run a shell command (bash) in the session's sandbox, beside its kernels: the same files (the working directory is " +
			"the workspace, /home/user), the same network policy and limits. Use it for ls, grep, git, pip, compilers and scripts. The " +
			"answer has the exit code, stdout and stderr. A command is killed at its timeout; one that should keep running (a server) " +
			"runs with background: true and the answer has its pid. Long output is cut to its beginning and end. While it runs, output is sent as " +
			"progress notifications (when the call has a progress token) and stderr as log messages; cancelling the call kills the command. " +
			networkSentence(t.cfg.Network),
		InputSchema: cmdSchema,
		Annotations: &sdk.ToolAnnotations{Title: "Run a shell command", DestructiveHint: jsonschema.Ptr(true), OpenWorldHint: jsonschema.Ptr(false)},
	}, t.runCommand)

	sdk.AddTool(s, &sdk.Tool{
		Name:  "restart_session",
		Title: "Restart a session",
		Description: "Restart a session's kernels (every language's, or one language's): their variables and imports are lost, " +
			"files in the workspace are kept. Use it when a kernel is stuck or its state is broken.",
		InputSchema: mustSchema[restartInput](),
		Annotations: &sdk.ToolAnnotations{Title: "Restart a session", DestructiveHint: jsonschema.Ptr(true), IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.restart)

	sdk.AddTool(s, &sdk.Tool{
		Name:        "close_session",
		Title:       "Close a session",
		Description: "End a session: its kernel stops and its workspace files are deleted. Use it when you are done with a session.",
		InputSchema: mustSchema[sessionInput](),
		Annotations: &sdk.ToolAnnotations{Title: "Close a session", DestructiveHint: jsonschema.Ptr(true), IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.close)

	sdk.AddTool(s, &sdk.Tool{
		Name:  "interrupt",
		Title: "Interrupt running code",
		Description: "Interrupt the code a session is running (as Ctrl-C: a KeyboardInterrupt in Python), e.g. from another client or a call " +
			"that timed out on your side. Variables defined before are kept. context limits it to one kernel of the session; without it " +
			"every kernel running code is interrupted. Cancelling a running execute_python/execute_code call does the same.",
		InputSchema: mustSchema[interruptInput](),
		Annotations: &sdk.ToolAnnotations{Title: "Interrupt running code", DestructiveHint: jsonschema.Ptr(false), IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.interrupt)

	sdk.AddTool(s, &sdk.Tool{
		Name:  "list_sessions",
		Title: "List sessions",
		Description: "List your sessions: each one's id, language, state (idle, busy, ...), network (the hosts it may reach, or no network) " +
			"and the time left before it ends if unused. " + networkSentence(t.cfg.Network),
		InputSchema: mustSchema[noInput](),
		Annotations: &sdk.ToolAnnotations{Title: "List sessions", ReadOnlyHint: true, OpenWorldHint: jsonschema.Ptr(false)},
	}, t.listSessions)

	createSchema := mustSchema[createInput]()
	createSchema.Properties["idle_timeout_s"].ExclusiveMinimum = jsonschema.Ptr(0.0)
	if p := t.cfg.Network; p != nil && len(p.Allow) > 0 {
		createSchema.Properties["network"].Description += " This gateway allows at most: " + strings.Join(p.Allow, ", ") + "."
	} else if p != nil {
		createSchema.Properties["network"].Description += " This gateway allows none: asking for a network is refused."
	}
	sdk.AddTool(s, &sdk.Tool{
		Name:  "create_session",
		Title: "Start a session",
		Description: "Start a session with chosen resource limits, network allowlist, language or idle timeout, and get its session_id " +
			"(the other tools start a default session when called without session_id). The gateway lowers limits above its operator's maximum " +
			"to it (the answer states the limits the session got) and refuses hosts outside its operator's allowlist, with the reason. " +
			networkSentence(t.cfg.Network),
		InputSchema: createSchema,
		Annotations: &sdk.ToolAnnotations{Title: "Start a session", DestructiveHint: jsonschema.Ptr(false), OpenWorldHint: jsonschema.Ptr(false)},
	}, t.createSession)

	t.registerPreview(s)
	t.registerSnapshots(s)
	t.registerResources(s)
}

// codeSchema bounds the input schema s of a tool that runs code (its
// fields code and timeout_s, see codeTimeout) and returns it.
func (t *tools) codeSchema(s *jsonschema.Schema) *jsonschema.Schema {
	s.Properties["timeout_s"].ExclusiveMinimum = jsonschema.Ptr(0.0)
	s.Properties["timeout_s"].Maximum = jsonschema.Ptr(t.cfg.MaxTimeout.Seconds())
	s.Properties["code"].MinLength = jsonschema.Ptr(1)
	return s
}

func mustSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %T: %v", *new(T), err))
	}
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return s
}

// session returns id, or starts a new session when id is empty, whose
// first kernel runs language ("": the configured sessions' language).
func (t *tools) session(ctx context.Context, id, language string) (string, bool, error) {
	if id = strings.TrimSpace(id); id != "" {
		return id, false, nil
	}
	opts := t.cfg.NewSession
	if language != "" {
		opts.Language = language
	}
	s, err := t.b.CreateSession(ctx, opts)
	if err != nil {
		return "", false, explain(err, "", "")
	}
	t.mu.Lock()
	t.created[s.ID] = true
	t.mu.Unlock()
	return s.ID, true, nil
}

func (t *tools) forget(id string) {
	t.mu.Lock()
	delete(t.created, id)
	t.mu.Unlock()
}

func newSessionNote(id, language string) string {
	return fmt.Sprintf("Started a new %s session, session_id %q. Pass session_id=%q to later calls to keep its variables and files.", language, id, id)
}

// codeTimeout is a code tool's timeout_s: from 0 (the gateway's
// default) to MaxTimeout.
func (t *tools) codeTimeout(seconds float64) (time.Duration, error) {
	timeout := time.Duration(seconds * float64(time.Second))
	if timeout < 0 || timeout > t.cfg.MaxTimeout {
		return 0, fmt.Errorf("timeout_s must be between 0 and %g seconds", t.cfg.MaxTimeout.Seconds())
	}
	return timeout, nil
}

// runCode runs code in session id and formats the answer; when this call
// created the session (created), the answer notes it as a session of
// newLanguage.
func (t *tools) runCode(ctx context.Context, req *sdk.CallToolRequest, id string, created bool, newLanguage, code string,
	opts client.ExecuteOptions) (*sdk.CallToolResult, *client.Execution, error) {
	x, err := t.run(ctx, req, id, code, opts)
	if err != nil {
		return nil, nil, explain(err, id, "")
	}
	note := ""
	if created {
		note = newSessionNote(id, newLanguage)
	}
	return formatExecution(x, note, t.cfg), x, nil
}

func (t *tools) execute(ctx context.Context, req *sdk.CallToolRequest, in executeInput) (*sdk.CallToolResult, ExecuteOutput, error) {
	start := time.Now()
	if strings.TrimSpace(in.Code) == "" {
		return nil, ExecuteOutput{}, errors.New("code is empty: pass the Python source to run")
	}
	timeout, err := t.codeTimeout(in.TimeoutS)
	if err != nil {
		return nil, ExecuteOutput{}, err
	}
	// Always Python's kernel, whatever the session's first language.
	id, created, err := t.session(ctx, in.SessionID, "python")
	if err != nil {
		return nil, ExecuteOutput{}, err
	}
	res, x, err := t.runCode(ctx, req, id, created, "Python", in.Code, client.ExecuteOptions{Timeout: timeout, Language: "python"})
	if err != nil {
		return nil, ExecuteOutput{}, err
	}
	t.log.Debug().Str("tool", "execute_python").Str("session", id).Str("status", x.Status).
		Int("content", len(res.Content)).Dur("took", time.Since(start)).Msg("mcp tool")
	return res, ExecuteOutput{SessionID: id, SessionCreated: created, Status: x.Status, ExecutionCount: x.ExecutionCount}, nil
}

func (t *tools) executeCode(ctx context.Context, req *sdk.CallToolRequest, in executeCodeInput) (*sdk.CallToolResult, ExecuteOutput, error) {
	start := time.Now()
	if strings.TrimSpace(in.Code) == "" {
		return nil, ExecuteOutput{}, errors.New("code is empty: pass the source to run")
	}
	timeout, err := t.codeTimeout(in.TimeoutS)
	if err != nil {
		return nil, ExecuteOutput{}, err
	}
	language := strings.ToLower(strings.TrimSpace(in.Language))
	if language == "" && in.Context == "" {
		language = "python"
	}
	id, created, err := t.session(ctx, in.SessionID, language)
	if err != nil {
		return nil, ExecuteOutput{}, err
	}
	res, x, err := t.runCode(ctx, req, id, created, language, in.Code, client.ExecuteOptions{Timeout: timeout, Language: language,
		Context: in.Context, Envs: in.Envs, Cwd: in.Cwd})
	if err != nil {
		return nil, ExecuteOutput{}, err
	}
	t.log.Debug().Str("tool", "execute_code").Str("session", id).Str("language", language).Str("status", x.Status).
		Int("content", len(res.Content)).Dur("took", time.Since(start)).Msg("mcp tool")
	return res, ExecuteOutput{SessionID: id, SessionCreated: created, Status: x.Status, ExecutionCount: x.ExecutionCount, Language: language}, nil
}

func (t *tools) languages(ctx context.Context, _ *sdk.CallToolRequest, _ noInput) (*sdk.CallToolResult, any, error) {
	ks, err := t.b.Kernels(ctx)
	if err != nil {
		return nil, nil, explain(err, "", "")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "execute_code runs %d languages here (language: also accepted; kernel):\n", len(ks))
	for _, k := range ks {
		var also []string
		for _, a := range k.Aliases {
			if a != k.Name {
				also = append(also, a)
			}
		}
		fmt.Fprintf(&b, "%s: %s; %s\n", k.Name, strings.Join(also, ", "), k.DisplayName)
	}
	return textResult(b.String()), nil, nil
}

func (t *tools) upload(ctx context.Context, _ *sdk.CallToolRequest, in uploadInput) (*sdk.CallToolResult, any, error) {
	var data []byte
	switch in.Encoding {
	case "", "text":
		data = []byte(in.Content)
	case "base64":
		var err error
		clean := strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, in.Content)
		if data, err = base64.StdEncoding.DecodeString(clean); err != nil {
			if data, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(clean, "=")); err != nil {
				return nil, nil, fmt.Errorf("content is not valid base64: %w", err)
			}
		}
	default:
		return nil, nil, fmt.Errorf("encoding must be text or base64, not %q", in.Encoding)
	}
	if len(data) > t.cfg.MaxUploadBytes {
		return nil, nil, fmt.Errorf("the file is %d bytes; upload_file takes at most %d", len(data), t.cfg.MaxUploadBytes)
	}
	id, created, err := t.session(ctx, in.SessionID, "")
	if err != nil {
		return nil, nil, err
	}
	fi, err := t.b.WriteFile(ctx, id, in.Path, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, explain(err, id, in.Path)
	}
	msg := fmt.Sprintf("Wrote %s to %s in session %s; the code opens it as %q.", humanBytes(fi.Size), fi.Path, id, fi.Path)
	if created {
		msg = newSessionNote(id, "Python") + "\n" + msg
	}
	return textResult(msg), nil, nil
}

// imageTypes are returned as image content by read_file.
var imageTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}

func (t *tools) read(ctx context.Context, _ *sdk.CallToolRequest, in fileInput) (*sdk.CallToolResult, any, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	f, err := t.b.ReadFile(ctx, in.SessionID, in.Path)
	if err != nil {
		return nil, nil, explain(err, in.SessionID, in.Path)
	}
	defer f.Close()
	limit := int64(t.cfg.MaxImageBytes)
	// Text is capped in characters; a UTF-8 character is at most 4 bytes.
	if textLimit := int64(t.cfg.MaxTextChars) * 4; textLimit > limit {
		limit = textLimit
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", in.Path, err)
	}
	size := f.Size
	if size < 0 {
		size = int64(len(data))
	}
	mime := imageTypes[strings.ToLower(path.Ext(in.Path))]
	if sniffed := http.DetectContentType(data); strings.HasPrefix(sniffed, "image/") && sniffed != "image/svg+xml" {
		mime = sniffed
	}
	if mime != "" {
		if int64(len(data)) > int64(t.cfg.MaxImageBytes) {
			return nil, nil, fmt.Errorf("%s is an image of %s; read_file returns images up to %s. Shrink it with execute_python (e.g. PIL or matplotlib) first",
				in.Path, humanBytes(size), humanBytes(int64(t.cfg.MaxImageBytes)))
		}
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: fmt.Sprintf("%s (%s, %s)", in.Path, mime, humanBytes(size))},
			&sdk.ImageContent{Data: data, MIMEType: mime},
		}}, nil, nil
	}
	cut := int64(len(data)) > limit
	if cut {
		data = data[:limit]
	}
	if !looksText(data, cut) {
		if cut || int64(len(data)) > int64(t.cfg.MaxResourceBytes) {
			return nil, nil, fmt.Errorf("%s is a binary file of %s; read_file returns binary files up to %s. Inspect it with execute_python or run_command",
				in.Path, humanBytes(size), humanBytes(min(limit, int64(t.cfg.MaxResourceBytes))))
		}
		ctype := mimeOf(in.Path)
		if ctype == "" {
			ctype = f.ContentType
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: fmt.Sprintf("%s is a binary file (%s, %s), attached as an embedded resource.", in.Path, ctype, humanBytes(size))},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: fileURI(in.SessionID, in.Path), MIMEType: ctype, Blob: data}},
		}}, nil, nil
	}
	text := stripANSI(strings.ToValidUTF8(string(data), "\uFFFD"))
	header := fmt.Sprintf("%s (%s):\n", in.Path, humanBytes(size))
	body, more := clipHead(text, t.cfg.MaxTextChars-utf8.RuneCountInString(header)-80)
	if cut || more > 0 {
		body += fmt.Sprintf("\n[output truncated: the file has %s; read the rest with execute_python]", humanBytes(size))
	}
	return textResult(header + body), nil, nil
}

// looksText reports whether data is UTF-8 text without NUL bytes (a
// character cut at the end of a truncated read is allowed).
func looksText(data []byte, cut bool) bool {
	if bytes.IndexByte(data, 0) >= 0 {
		return false
	}
	if cut {
		for i := 0; i < 3 && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	return utf8.Valid(data)
}

func (t *tools) list(ctx context.Context, _ *sdk.CallToolRequest, in listInput) (*sdk.CallToolResult, any, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	l, err := t.b.ListFiles(ctx, in.SessionID, in.Path)
	if err != nil {
		return nil, nil, explain(err, in.SessionID, in.Path)
	}
	dir := in.Path
	if dir == "" {
		dir = "the workspace root"
	}
	if len(l.Entries) == 0 {
		return textResult(fmt.Sprintf("%s is empty.", dir)), nil, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries in %s (type, size, modified, path):\n", len(l.Entries), dir)
	for _, e := range l.Entries {
		p := e.Path
		if e.Type == "dir" {
			p += "/"
		}
		fmt.Fprintf(&b, "%-4s %9s  %s  %s\n", e.Type, humanBytes(e.Size), e.MTime.UTC().Format("2006-01-02 15:04:05"), p)
	}
	text, _ := clipHead(b.String(), t.cfg.MaxTextChars-100)
	if l.Truncated {
		text += "\n[listing truncated by the gateway]"
	}
	return textResult(text), nil, nil
}

func (t *tools) edit(ctx context.Context, req *sdk.CallToolRequest, in editInput) (*sdk.CallToolResult, any, error) {
	if in.Command != client.EditCreate {
		if err := needSession(in.SessionID); err != nil {
			return nil, nil, err
		}
	}
	if strings.TrimSpace(in.Path) == "" {
		return nil, nil, errors.New("path is required: the file to view or edit, relative to the workspace (e.g. src/app.py)")
	}
	id, created, err := t.session(ctx, in.SessionID, "")
	if err != nil {
		return nil, nil, err
	}
	res, err := t.b.EditFile(ctx, id, in.Path, client.EditRequest{Command: in.Command, ViewRange: in.ViewRange,
		FileText: in.FileText, OldStr: in.OldStr, NewStr: in.NewStr, InsertLine: in.InsertLine})
	var ae *client.APIError
	if in.Command == client.EditView && in.ViewRange == nil && errors.As(err, &ae) && ae.Code == "file_conflict" && strings.Contains(ae.Message, "is a directory") {
		return t.list(ctx, req, listInput{SessionID: id, Path: in.Path})
	}
	if err != nil {
		return nil, nil, explainEdit(err, id, in.Path)
	}
	var b strings.Builder
	if created {
		b.WriteString(newSessionNote(id, "Python") + "\n")
	}
	size := fmt.Sprintf("%d lines, %s", res.Lines, humanBytes(res.Size))
	switch res.Command {
	case client.EditCreate:
		verb := "Replaced"
		if res.Created {
			verb = "Created"
		}
		fmt.Fprintf(&b, "%s %s (%s).", verb, res.Path, size)
		return textResult(b.String()), nil, nil
	case client.EditView:
		if res.Lines == 0 {
			fmt.Fprintf(&b, "%s is empty.", res.Path)
			return textResult(b.String()), nil, nil
		}
		fmt.Fprintf(&b, "%s (%s), lines %d-%d:\n", res.Path, size, res.StartLine, res.EndLine)
	case client.EditStrReplace:
		fmt.Fprintf(&b, "Edited %s (%s now). Lines %d-%d after the change:\n", res.Path, size, res.StartLine, res.EndLine)
	case client.EditInsert:
		fmt.Fprintf(&b, "Inserted into %s (%s now). Lines %d-%d after the change:\n", res.Path, size, res.StartLine, res.EndLine)
	}
	body, more := clipHead(res.Text, t.cfg.MaxTextChars-utf8.RuneCountInString(b.String())-120)
	b.WriteString(body)
	if more > 0 {
		b.WriteString("\n[output truncated: view fewer lines with view_range]")
	}
	return textResult(b.String()), nil, nil
}

// explainEdit turns an edit's refusal into a message a model can act on;
// other errors are explain's.
func explainEdit(err error, sessionID, path string) error {
	var ae *client.APIError
	if !errors.As(err, &ae) {
		return explain(err, sessionID, path)
	}
	switch ae.Code {
	case "no_match", "multiple_matches":
		return fmt.Errorf("%s. The file was not changed; view it (command=view) to copy the exact text", ae.Message)
	case "file_changed":
		return fmt.Errorf("%s", ae.Message)
	case "not_text":
		return fmt.Errorf("%s. edit_file edits UTF-8 text only; use execute_python for this file", ae.Message)
	case "too_large":
		return fmt.Errorf("%s. Use execute_python for large files, or upload_file to replace one", ae.Message)
	case "bad_request":
		return fmt.Errorf("%s", ae.Message)
	case "file_conflict":
		return fmt.Errorf("%q cannot be edited: %s", path, ae.Message)
	}
	return explain(err, sessionID, path)
}

// restart restarts every kernel of the session, or those of one language.
func (t *tools) restart(ctx context.Context, _ *sdk.CallToolRequest, in restartInput) (*sdk.CallToolResult, any, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	kernel := ""
	if in.Language != "" {
		ks, err := t.b.Kernels(ctx)
		if err != nil {
			return nil, nil, explain(err, "", "")
		}
		if kernel = kernelNamed(ks, in.Language); kernel == "" {
			return nil, nil, fmt.Errorf("unknown language %q: list_languages says which this gateway runs", in.Language)
		}
	}
	cxs, err := t.b.Contexts(ctx, in.SessionID)
	if err != nil {
		return nil, nil, explain(err, in.SessionID, "")
	}
	var done []string
	for _, cx := range cxs {
		if kernel != "" && cx.Language != kernel {
			continue
		}
		if err := t.b.RestartContext(ctx, in.SessionID, cx.ID); err != nil {
			return nil, nil, explain(err, in.SessionID, "")
		}
		done = append(done, cx.Language)
	}
	if len(done) == 0 {
		return textResult(fmt.Sprintf("Session %s has no %s kernel: nothing to restart (execute_code starts one on first use).", in.SessionID, in.Language)), nil, nil
	}
	return textResult(fmt.Sprintf("Restarted session %s (%s): variables and imports are gone, workspace files are kept.",
		in.SessionID, strings.Join(done, ", "))), nil, nil
}

// kernelNamed returns the name of the kernel of ks that name (a name or an
// alias, any case) stands for, or "".
func kernelNamed(ks []client.Kernel, name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, k := range ks {
		if k.Name == name {
			return k.Name
		}
		for _, a := range k.Aliases {
			if a == name {
				return k.Name
			}
		}
	}
	return ""
}

func (t *tools) close(ctx context.Context, _ *sdk.CallToolRequest, in sessionInput) (*sdk.CallToolResult, any, error) {
	if err := needSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	if err := t.b.DeleteSession(ctx, in.SessionID); err != nil {
		return nil, nil, explain(err, in.SessionID, "")
	}
	t.forget(in.SessionID)
	return textResult(fmt.Sprintf("Closed session %s: its kernel stopped and its files are deleted.", in.SessionID)), nil, nil
}

func needSession(id string) error {
	if strings.TrimSpace(id) == "" {
		return errors.New("session_id is required: use the id from execute_python's answer (execute_python without session_id starts a session)")
	}
	return nil
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// explain turns a gateway error into a message a model can act on.
func explain(err error, sessionID, path string) error {
	var ae *client.APIError
	var re *client.RejectedError
	if !errors.As(err, &ae) && errors.As(err, &re) {
		// A streamed execution's refusal ("rejected" frame) carries the
		// same codes as the REST API's error answers.
		ae = &client.APIError{Code: re.Code, Message: re.Message}
	}
	if ae == nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("the call was cancelled: %w", err)
		}
		return fmt.Errorf("could not reach the glassroom gateway: %w", err)
	}
	switch {
	case ae.Code == "not_found":
		return fmt.Errorf("session %q does not exist (sessions end when closed or after some idle time). Call execute_python without session_id to start a new one", sessionID)
	case ae.Code == "context_not_found":
		return fmt.Errorf("no such context in session %s; omit context to run in the kernel of the code's language (%s)", sessionID, ae.Message)
	case ae.Code == "file_not_found":
		return fmt.Errorf("%q is not in the workspace of session %s (list_files shows what is there): %s", path, sessionID, ae.Message)
	case ae.Code == "bad_path":
		return fmt.Errorf("invalid path %q: use a relative, '/'-separated path inside the workspace, without '..' (%s)", path, ae.Message)
	case ae.Code == "too_many_sessions":
		return fmt.Errorf("too many open sessions: close one you no longer need with close_session, or reuse one by its session_id (%s)", ae.Message)
	case ae.Code == "queue_full":
		return fmt.Errorf("the session is busy with queued executions; wait for them or call restart_session (%s)", ae.Message)
	case ae.Code == "kernel_dead":
		return fmt.Errorf("the session's kernel is dead; call restart_session with session_id %q", sessionID)
	case ae.Code == "workspace_full":
		return fmt.Errorf("the session's workspace is full; delete files with execute_python and retry")
	case ae.Status == http.StatusUnauthorized:
		return errors.New("the glassroom gateway refused the API key; check the MCP server's --api-key / GLASSROOM_API_KEY")
	case ae.Status == 0:
		return fmt.Errorf("the glassroom gateway refused the execution: %s: %s", ae.Code, ae.Message)
	}
	return fmt.Errorf("the glassroom gateway answered %d %s: %s", ae.Status, ae.Code, ae.Message)
}

func (t *tools) runCommand(ctx context.Context, req *sdk.CallToolRequest, in commandInput) (*sdk.CallToolResult, CommandOutput, error) {
	if strings.TrimSpace(in.Cmd) == "" {
		return nil, CommandOutput{}, errors.New("cmd is empty: pass the shell command to run")
	}
	timeout := time.Duration(in.TimeoutS * float64(time.Second))
	if timeout < 0 || (!in.Background && timeout > t.cfg.MaxTimeout) {
		return nil, CommandOutput{}, fmt.Errorf("timeout_s must be between 0 and %g seconds (or run it in the background)", t.cfg.MaxTimeout.Seconds())
	}
	id, created, err := t.session(ctx, in.SessionID, "")
	if err != nil {
		return nil, CommandOutput{}, err
	}
	note := ""
	if created {
		note = newSessionNote(id, "Python") + "\n"
	}
	opts := client.CommandOptions{Cwd: in.Cwd, Envs: in.Envs, Timeout: timeout}
	if in.Background {
		h, err := t.b.StartCommand(ctx, id, in.Cmd, opts)
		if err != nil {
			return nil, CommandOutput{}, explain(err, id, "")
		}
		msg := fmt.Sprintf("%sStarted in the background: pid %d. Its output is kept by the gateway (GET /v1/sessions/%s/commands/%d).", note, h.PID, id, h.PID)
		return textResult(msg), CommandOutput{SessionID: id, SessionCreated: created, PID: h.PID}, nil
	}
	c, err := t.runCommandLive(ctx, req, id, in.Cmd, opts)
	if err != nil {
		return nil, CommandOutput{}, explain(err, id, "")
	}
	status := "exit code " + strconv.Itoa(derefInt(c.ExitCode))
	if c.TimedOut {
		status = fmt.Sprintf("killed: the command ran past its timeout (%s)", timeout)
		if timeout == 0 {
			status = "killed: the command ran past the gateway's timeout"
		}
	}
	if c.Truncated {
		status += "; the gateway dropped output past its caps"
	}
	secs := []section{{header: strings.TrimSpace(note + status), fixed: true}}
	if c.Stdout != "" {
		secs = append(secs, section{header: "stdout:", body: c.Stdout})
	}
	if c.Stderr != "" {
		secs = append(secs, section{header: "stderr:", body: c.Stderr})
	}
	return textResult(render(secs, t.cfg.MaxTextChars)), CommandOutput{SessionID: id, SessionCreated: created, PID: c.PID, ExitCode: c.ExitCode}, nil
}

func derefInt(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

// languageExamples are the language names of the kernel registry, as the
// SDKs spell them (python, r, javascript, ...).
func languageExamples() []any {
	var out []any
	for _, k := range kernels.All() {
		out = append(out, k.SDKLanguage)
	}
	return out
}

// languageChoices lists the registry's languages for a schema: "python
// (default), r, javascript (js), ..., bash or java", with the short
// aliases clients use.
func languageChoices() string {
	var parts []string
	for _, k := range kernels.All() {
		p := k.SDKLanguage
		if k.Name == kernels.Default {
			p += " (default)"
		}
		for _, a := range k.Aliases {
			if len(a) == 2 && a != k.SDKLanguage && a != "py" && a != "sh" {
				p += " (" + a + ")"
			}
		}
		parts = append(parts, p)
	}
	return joinOr(parts)
}

// languageNames lists the registry's display names: "Python 3, R,
// JavaScript (Deno), ... or Java".
func languageNames() string {
	var parts []string
	for _, k := range kernels.All() {
		parts = append(parts, k.DisplayName)
	}
	return joinOr(parts)
}

func joinOr(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
