package fileedit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/glassroom/glassroom/workspace"
)

// The commands.
const (
	View       = "view"
	Create     = "create"
	StrReplace = "str_replace"
	Insert     = "insert"
)

// Config bounds an Editor. Zero fields take the defaults named.
type Config struct {
	// MaxFileBytes bounds the file an edit reads and the file it writes
	// (default 4 MiB).
	MaxFileBytes int64
	// ContextLines is how many unchanged lines an edit's snippet shows
	// before and after the change (default 4).
	ContextLines int
	// MaxSnippetLines bounds an edit's snippet (default 60).
	MaxSnippetLines int
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if c.MaxFileBytes < 0 || c.ContextLines < 0 || c.MaxSnippetLines < 0 {
		return errors.New("fileedit: config: negative limit")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = 4 << 20
	}
	if c.ContextLines == 0 {
		c.ContextLines = 4
	}
	if c.MaxSnippetLines == 0 {
		c.MaxSnippetLines = 60
	}
	return c
}

// Command is one edit, in the shape of agents' text-editor tools. A nil
// pointer is an absent argument; an argument the command does not take is
// an error.
type Command struct {
	// Command is view, create, str_replace or insert.
	Command string
	// ViewRange (view) is [start, end], lines counted from 1, both
	// included; end -1 (or past the last line) is the end of the file.
	ViewRange []int
	// FileText (create, required) is the new file's content.
	FileText *string
	// OldStr (str_replace, required, not empty) must occur exactly once.
	OldStr *string
	// NewStr replaces OldStr (str_replace; absent: "") or is inserted
	// (insert, required, not empty).
	NewStr *string
	// InsertLine (insert, required) is the line NewStr goes after: 0 for
	// the top of the file, the number of lines for its end.
	InsertLine *int
}

// Result is what an edit did, or what view shows.
type Result struct {
	Path    string // as workspace.Clean made it
	Command string
	Created bool  // create made a new file (false: it replaced one)
	Size    int64 // bytes of the file (after the edit)
	Lines   int   // lines of the file (after the edit)
	// Text is, for view, the lines asked for; for str_replace and insert,
	// a snippet of the file around the change; each line as
	// "%6d\t<line>\n" (its number, a tab, the line without its line
	// ending). Empty for create.
	Text string
	// StartLine and EndLine are the first and last line in Text (0 when
	// Text is empty).
	StartLine, EndLine int
}

// Editor edits workspace files. It is safe for concurrent use: edits of
// one path (of one workspace.FS) through one Editor run one at a time.
type Editor struct {
	cfg Config

	mu    sync.Mutex
	locks map[lockKey]*pathLock // paths being edited; an entry lives while it has users
}

type lockKey struct {
	fs   workspace.FS
	path string
}

type pathLock struct {
	mu    sync.Mutex
	users int // guarded by Editor.mu
}

// New returns an Editor.
func New(cfg Config) (*Editor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Editor{cfg: cfg.withDefaults(), locks: map[lockKey]*pathLock{}}, nil
}

// MaxFileBytes is the largest file this Editor reads or writes.
func (e *Editor) MaxFileBytes() int64 { return e.cfg.MaxFileBytes }

// lock serialises the edits of p in fsys and returns the unlock. An fsys
// whose type is not comparable (none of glassroom's) is not locked.
func (e *Editor) lock(fsys workspace.FS, p string) func() {
	if t := reflect.TypeOf(fsys); t == nil || !t.Comparable() {
		return func() {}
	}
	k := lockKey{fsys, p}
	e.mu.Lock()
	l := e.locks[k]
	if l == nil {
		l = &pathLock{}
		e.locks[k] = l
	}
	l.users++
	e.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		e.mu.Lock()
		if l.users--; l.users == 0 {
			delete(e.locks, k)
		}
		e.mu.Unlock()
	}
}

// Do runs cmd on the file p of fsys. It blocks for the file I/O (and for
// another edit of p through e). A failed edit has changed nothing.
func (e *Editor) Do(fsys workspace.FS, p string, cmd Command) (Result, error) {
	clean, err := workspace.Clean(p)
	if err != nil {
		return Result{}, fmt.Errorf("fileedit: %s: %w", cmd.Command, err)
	}
	if err := e.check(clean, cmd); err != nil {
		return Result{}, err
	}
	var res Result
	if cmd.Command == View {
		res, err = e.view(fsys, clean, cmd.ViewRange)
	} else {
		unlock := e.lock(fsys, clean)
		switch cmd.Command {
		case Create:
			res, err = e.create(fsys, clean, *cmd.FileText)
		case StrReplace:
			newStr := ""
			if cmd.NewStr != nil {
				newStr = *cmd.NewStr
			}
			res, err = e.replace(fsys, clean, *cmd.OldStr, newStr)
		case Insert:
			res, err = e.insert(fsys, clean, *cmd.InsertLine, *cmd.NewStr)
		}
		unlock()
	}
	if err != nil {
		return Result{}, fmt.Errorf("fileedit: %s: %w", cmd.Command, symlinkInPath(fsys, clean, err))
	}
	res.Path, res.Command = clean, cmd.Command
	return res, nil
}

// symlinkInPath makes err, a workspace.ErrNotDir on p, say so when the
// directory in the way is a symlink (the workspace never follows one):
// ErrSymlink naming it, instead of "not a directory".
func symlinkInPath(fsys workspace.FS, p string, err error) error {
	if !errors.Is(err, workspace.ErrNotDir) {
		return err
	}
	dir := ""
	for _, seg := range strings.Split(p, "/") {
		dir = strings.TrimPrefix(dir+"/"+seg, "/")
		if dir == p {
			break
		}
		if ent, serr := fsys.Stat(dir); serr == nil && ent.Type == "symlink" {
			return &workspace.PathError{Kind: workspace.ErrSymlink, Path: dir, Detail: "a directory in the path is a symlink; symlinks are not followed", Err: err}
		}
	}
	return err
}

// check validates cmd's arguments before any I/O.
func (e *Editor) check(p string, c Command) error {
	takes := map[string][]string{
		View:       {"view_range"},
		Create:     {"file_text"},
		StrReplace: {"old_str", "new_str"},
		Insert:     {"insert_line", "new_str"},
	}
	allowed, ok := takes[c.Command]
	if !ok {
		return errorf(ErrInvalid, p, "command must be view, create, str_replace or insert, not %q", c.Command)
	}
	given := map[string]bool{"view_range": c.ViewRange != nil, "file_text": c.FileText != nil,
		"old_str": c.OldStr != nil, "new_str": c.NewStr != nil, "insert_line": c.InsertLine != nil}
	for _, arg := range []string{"view_range", "file_text", "old_str", "new_str", "insert_line"} {
		if given[arg] && !contains(allowed, arg) {
			return errorf(ErrInvalid, p, "%s is not an argument of %s (it takes %s)", arg, c.Command, strings.Join(allowed, ", "))
		}
	}
	need := func(arg string) error {
		if !given[arg] {
			return errorf(ErrInvalid, p, "%s needs %s", c.Command, arg)
		}
		return nil
	}
	switch c.Command {
	case Create:
		if err := need("file_text"); err != nil {
			return err
		}
	case StrReplace:
		if err := need("old_str"); err != nil {
			return err
		}
		if *c.OldStr == "" {
			return errorf(ErrInvalid, p, "old_str is empty: pass the exact text to replace")
		}
	case Insert:
		if err := need("insert_line"); err != nil {
			return err
		}
		if err := need("new_str"); err != nil {
			return err
		}
		if *c.NewStr == "" {
			return errorf(ErrInvalid, p, "new_str is empty: pass the text to insert")
		}
	case View:
		if c.ViewRange != nil && len(c.ViewRange) != 2 {
			return errorf(ErrInvalid, p, "view_range must be [start, end] (lines from 1; end -1 for the end of the file)")
		}
	}
	for arg, v := range map[string]*string{"file_text": c.FileText, "old_str": c.OldStr, "new_str": c.NewStr} {
		switch {
		case v == nil:
		case int64(len(*v)) > e.cfg.MaxFileBytes:
			return errorf(ErrTooLarge, p, "%s has %s; files up to %s can be edited", arg, humanBytes(int64(len(*v))), humanBytes(e.cfg.MaxFileBytes))
		case strings.IndexByte(*v, 0) >= 0:
			return errorf(ErrInvalid, p, "%s contains a NUL byte: only text can be edited", arg)
		case !utf8.ValidString(*v):
			return errorf(ErrInvalid, p, "%s is not valid UTF-8", arg)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// read returns the content of the regular text file p.
func (e *Editor) read(fsys workspace.FS, p string) ([]byte, error) {
	ent, err := fsys.Stat(p)
	if err != nil {
		return nil, err
	}
	switch ent.Type {
	case "file":
	case "dir":
		return nil, &workspace.PathError{Kind: workspace.ErrIsDir, Path: p}
	case "symlink":
		return nil, &workspace.PathError{Kind: workspace.ErrSymlink, Path: p, Detail: "the file is a symlink; edit its target"}
	default:
		return nil, &workspace.PathError{Kind: workspace.ErrBadPath, Path: p, Detail: "not a regular file"}
	}
	if ent.Size > e.cfg.MaxFileBytes {
		return nil, e.tooLarge(p, ent.Size)
	}
	f, _, err := fsys.OpenFile(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, e.cfg.MaxFileBytes+1))
	if err != nil {
		var pe *workspace.PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "read", Err: err}
	}
	if int64(len(data)) > e.cfg.MaxFileBytes {
		return nil, e.tooLarge(p, int64(len(data)))
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, errorf(ErrNotText, p, "it has NUL bytes or invalid UTF-8; edit binary files with code instead")
	}
	return data, nil
}

func (e *Editor) tooLarge(p string, size int64) *Error {
	return errorf(ErrTooLarge, p, "it has %s; files up to %s can be edited (change larger files with code)", humanBytes(size), humanBytes(e.cfg.MaxFileBytes))
}

// write replaces p, which held old when it was read, with data: if p
// still holds old, data goes to a temporary file renamed into place.
func (e *Editor) write(fsys workspace.FS, p string, old, data []byte) error {
	if int64(len(data)) > e.cfg.MaxFileBytes {
		return errorf(ErrTooLarge, p, "the edit would make it %s; files up to %s can be edited", humanBytes(int64(len(data))), humanBytes(e.cfg.MaxFileBytes))
	}
	now, err := e.read(fsys, p)
	if err != nil && !errors.Is(err, ErrNotText) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, workspace.ErrNotFound) {
		return err
	}
	if err != nil || !bytes.Equal(now, old) {
		return errorf(ErrChanged, p, "something else wrote it meanwhile; nothing was written: view it and retry")
	}
	_, err = fsys.Write(p, bytes.NewReader(data))
	return err
}

func (e *Editor) view(fsys workspace.FS, p string, vr []int) (Result, error) {
	data, err := e.read(fsys, p)
	if err != nil {
		return Result{}, err
	}
	starts := lineStarts(data)
	n := len(starts)
	from, to := 1, n
	if vr != nil {
		from, to = vr[0], vr[1]
		switch {
		case n == 0:
			return Result{}, errorf(ErrInvalid, p, "the file is empty (0 lines): view it without view_range")
		case from < 1 || from > n:
			return Result{}, errorf(ErrInvalid, p, "view_range starts at line %d, but the file has lines 1 to %d", from, n)
		case to == -1 || to > n:
			to = n
		case to < from:
			return Result{}, errorf(ErrInvalid, p, "view_range ends at line %d, before its start %d (use -1 for the end of the file)", to, from)
		}
	}
	res := Result{Size: int64(len(data)), Lines: n}
	if n > 0 {
		res.Text, res.StartLine, res.EndLine = numbered(data, starts, from, to), from, to
	}
	return res, nil
}

func (e *Editor) create(fsys workspace.FS, p, text string) (Result, error) {
	created := false
	ent, err := fsys.Stat(p)
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		created = true
	case err != nil:
		return Result{}, err
	case ent.Type == "dir":
		return Result{}, &workspace.PathError{Kind: workspace.ErrIsDir, Path: p}
	}
	n, err := fsys.Write(p, strings.NewReader(text))
	if err != nil {
		return Result{}, err
	}
	return Result{Created: created, Size: n, Lines: len(lineStarts([]byte(text)))}, nil
}

func (e *Editor) replace(fsys workspace.FS, p, oldStr, newStr string) (Result, error) {
	data, err := e.read(fsys, p)
	if err != nil {
		return Result{}, err
	}
	f := find(data, oldStr)
	if f.n == 0 && usesCRLF(data) && strings.Contains(oldStr, "\n") && !strings.Contains(oldStr+newStr, "\r") {
		// The file ends its lines with CRLF; the caller wrote LF.
		oldStr, newStr = strings.ReplaceAll(oldStr, "\n", "\r\n"), strings.ReplaceAll(newStr, "\n", "\r\n")
		f = find(data, oldStr)
	}
	switch {
	case f.n == 0:
		detail := "it must occur exactly once, character for character (whitespace and indentation included): view the file and copy the text"
		if t := strings.TrimSpace(oldStr); t != "" && t != oldStr && bytes.Contains(data, []byte(t)) {
			detail = "it occurs only with other leading or trailing whitespace (spaces, tabs, newlines): copy the text exactly as the file has it"
		}
		return Result{}, &Error{Kind: ErrNoMatch, Path: p, Detail: "0 matches: " + detail}
	case f.n > 1:
		where := "at lines " + lineList(f.lines, f.more)
		if len(f.lines) == 1 && !f.more {
			where = fmt.Sprintf("all on line %d", f.lines[0])
		}
		return Result{}, &Error{Kind: ErrManyMatches, Path: p, Matches: f.n, Lines: f.lines,
			Detail: fmt.Sprintf("%d matches, %s; it must occur exactly once: include more of the surrounding text in old_str to make it unique",
				f.n, where)}
	}
	i := f.first
	out := make([]byte, 0, len(data)-len(oldStr)+len(newStr))
	out = append(append(append(out, data[:i]...), newStr...), data[i+len(oldStr):]...)
	if err := e.write(fsys, p, data, out); err != nil {
		return Result{}, err
	}
	last := i + len(newStr) - 1
	if last < i {
		last = i
	}
	return e.edited(out, i, last), nil
}

func (e *Editor) insert(fsys workspace.FS, p string, line int, text string) (Result, error) {
	data, err := e.read(fsys, p)
	if err != nil {
		return Result{}, err
	}
	starts := lineStarts(data)
	n := len(starts)
	if line < 0 || line > n {
		return Result{}, errorf(ErrInvalid, p, "insert_line %d is out of range: the file has %d lines (0 inserts at the top, %d after the last line)", line, n, n)
	}
	nl := "\n"
	if usesCRLF(data) {
		nl = "\r\n"
		if !strings.Contains(text, "\r") {
			text = strings.ReplaceAll(text, "\n", "\r\n")
		}
	}
	off, prefix := len(data), ""
	if line < n {
		off = starts[line]
	} else if len(data) > 0 && data[len(data)-1] != '\n' {
		prefix = nl // the last line had no line ending: end it, and keep it so
	}
	if !strings.HasSuffix(text, "\n") && (off < len(data) || (len(data) > 0 && data[len(data)-1] == '\n')) {
		text += nl
	}
	out := make([]byte, 0, len(data)+len(prefix)+len(text))
	out = append(append(append(append(out, data[:off]...), prefix...), text...), data[off:]...)
	if err := e.write(fsys, p, data, out); err != nil {
		return Result{}, err
	}
	first := off + len(prefix)
	return e.edited(out, first, first+len(text)-1), nil
}

// edited describes data after an edit that changed bytes first to last:
// a snippet of the lines around them.
func (e *Editor) edited(data []byte, first, last int) Result {
	starts := lineStarts(data)
	n := len(starts)
	res := Result{Size: int64(len(data)), Lines: n}
	if n == 0 {
		return res
	}
	from := max(1, lineOf(starts, first)-e.cfg.ContextLines)
	to := min(n, lineOf(starts, last)+e.cfg.ContextLines)
	to = min(to, from+e.cfg.MaxSnippetLines-1)
	res.Text, res.StartLine, res.EndLine = numbered(data, starts, from, to), from, to
	return res
}

// found is where a string occurs in a file.
type found struct {
	n     int   // occurrences, overlapping ones included ("aa" occurs twice in "aaa")
	first int   // offset of the first
	lines []int // the distinct lines (from 1) of the first occurrences, at most MaxMatchLines
	more  bool  // occurrences on further lines are not in lines
}

// find counts the occurrences of s in data and notes where they are.
func find(data []byte, s string) found {
	f := found{first: -1}
	line, prev := 1, 0
	for i := 0; i <= len(data); {
		j := bytes.Index(data[i:], []byte(s))
		if j < 0 {
			break
		}
		off := i + j
		if f.n++; f.n == 1 {
			f.first = off
		}
		if !f.more {
			line += bytes.Count(data[prev:off], []byte("\n"))
			prev = off
			switch {
			case len(f.lines) > 0 && f.lines[len(f.lines)-1] == line:
			case len(f.lines) == MaxMatchLines:
				f.more = true
			default:
				f.lines = append(f.lines, line)
			}
		}
		i = off + 1
	}
	return f
}

// usesCRLF reports whether every line ending of data is CRLF (and there
// is one).
func usesCRLF(data []byte) bool {
	crlf := bytes.Count(data, []byte("\r\n"))
	return crlf > 0 && crlf == bytes.Count(data, []byte("\n"))
}

// lineStarts returns the offset of each line of data: a line ends after
// "\n", and a final "\n" does not start another line (so "a\nb\n" has 2
// lines, "" none).
func lineStarts(data []byte) []int {
	if len(data) == 0 {
		return nil
	}
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineOf returns the line (from 1) of byte off.
func lineOf(starts []int, off int) int {
	return sort.Search(len(starts), func(k int) bool { return starts[k] > off })
}

// numbered returns lines from to to (from 1, included) of data, each as
// "%6d\t<line>\n" without its line ending.
func numbered(data []byte, starts []int, from, to int) string {
	var b strings.Builder
	for l := from; l <= to; l++ {
		end := len(data)
		if l < len(starts) {
			end = starts[l]
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(data[starts[l-1]:end], []byte("\n")), []byte("\r"))
		fmt.Fprintf(&b, "%6d\t%s\n", l, line)
	}
	return b.String()
}
