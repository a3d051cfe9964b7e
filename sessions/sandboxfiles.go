package sessions

// Files of the sandbox's own file system outside the workspace
// (/proc/sys/kernel/random/boot_id, /etc/os-release, the sandbox's /tmp
// where its processes share one), read-only, through a short command in
// the sandbox: the gateway never opens a path of the sandbox's root on the
// host, and the read runs with the sandbox's user, its permissions and
// its view of the file system.

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/workspace"
)

// MaxSandboxFileBytes bounds a read of a file outside the workspace (a
// system file; a larger one is copied into the workspace and read there).
const MaxSandboxFileBytes = 16 << 20

// sandboxFileWait bounds one read or stat in the sandbox, whatever the
// caller's context.
const sandboxFileWait = time.Minute

// maxProbes is how many of the gateway's own short commands (Commands'
// probes) one session runs at once: a client asking for many files at
// once starts no more processes in the sandbox than this.
const maxProbes = 4

// probe waits for a place among the session's probes (or ctx's end) and
// returns its release.
func (m *Commands) probe(ctx context.Context, op string) (func(), error) {
	select {
	case m.probes <- struct{}{}:
		return func() { <-m.probes }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("sessions: %s: %w", op, ctx.Err())
	}
}

// CleanSandboxPath validates an absolute path of the sandbox's file
// system and returns it in canonical form ("/a/b", ".." resolved
// lexically): at most workspace.MaxPathBytes, no NUL byte or control
// character. Its errors are *workspace.PathError (ErrBadPath).
func CleanSandboxPath(p string) (string, error) {
	bad := func(why string) error {
		return &workspace.PathError{Kind: workspace.ErrBadPath, Detail: why}
	}
	switch {
	case !strings.HasPrefix(p, "/"):
		return "", bad("not an absolute path")
	case len(p) > workspace.MaxPathBytes:
		return "", bad(fmt.Sprintf("longer than %d bytes", workspace.MaxPathBytes))
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return "", bad("control character")
		}
	}
	return path.Clean(p), nil
}

// shellQuote quotes s as one word of bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// The exit codes of the read and stat scripts that say why they failed.
const (
	sandboxFileMissing = 3
	sandboxFileIsDir   = 4
	sandboxFileDenied  = 5
)

// sandboxFileChecks is the start of the stat script: $p exists (a
// dangling symlink too), else exit sandboxFileMissing.
const sandboxFileChecks = `[ -e "$p" ] || [ -L "$p" ] || exit 3
`

// ReadSandboxFile reads the file p (absolute, outside the workspace or
// not: CleanSandboxPath) of the sandbox's own file system, following
// symlinks, at most limit bytes (0 or more than MaxSandboxFileBytes:
// MaxSandboxFileBytes): a longer one is ErrSandboxFileTooLarge. It runs one command in the sandbox (waking a paused one). Errors: a
// *workspace.PathError of kind ErrBadPath, ErrNotFound, ErrIsDir or
// ErrPermission; ErrSandboxFileTooLarge; ErrNoCommands where the runtime
// runs none. Safe for concurrent use.
func (m *Commands) ReadSandboxFile(ctx context.Context, p string, limit int64) ([]byte, error) {
	p, err := CleanSandboxPath(p)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxSandboxFileBytes {
		limit = MaxSandboxFileBytes
	}
	// -e follows symlinks: a dangling one is missing.
	script := "p=" + shellQuote(p) + "\n" + `[ -e "$p" ] || exit 3
[ -d "$p" ] && exit 4
[ -r "$p" ] || exit 5
exec head -c ` + strconv.FormatInt(limit+1, 10) + ` -- "$p"`
	out, err := m.runSandboxScript(ctx, p, "read sandbox file", script, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("sessions: read sandbox file %s: %w (at most %d bytes: copy it into the workspace)", p, ErrSandboxFileTooLarge, limit)
	}
	return out, nil
}

// StatSandboxFile describes the entry p (absolute: CleanSandboxPath) of
// the sandbox's own file system, not following a last symlink (Entry.Path
// is p, SymlinkTarget the link's text). It runs one command in the
// sandbox; errors as ReadSandboxFile's. Safe for concurrent use.
func (m *Commands) StatSandboxFile(ctx context.Context, p string) (workspace.Entry, error) {
	p, err := CleanSandboxPath(p)
	if err != nil {
		return workspace.Entry{}, err
	}
	script := "p=" + shellQuote(p) + "\n" + sandboxFileChecks +
		`find "$p" -maxdepth 0 -printf '%y/%s/%m/%T@\n%l' || exit 1
exit 0`
	out, err := m.runSandboxScript(ctx, p, "stat sandbox file", script, 2*workspace.MaxPathBytes)
	if err != nil {
		return workspace.Entry{}, err
	}
	return parseSandboxStat(p, string(out))
}

// parseSandboxStat reads the stat script's output (find's, as gVisor
// answers coreutils' statx with EINVAL): "type/size/mode/mtime" (type
// f, d, l or another letter; mode octal; mtime in seconds with a
// fraction) and, for a symlink, its target on the next line.
func parseSandboxStat(p, out string) (workspace.Entry, error) {
	line, target, _ := strings.Cut(out, "\n")
	f := strings.Split(line, "/")
	if len(f) != 4 {
		return workspace.Entry{}, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "unreadable stat output"}
	}
	size, err1 := strconv.ParseInt(f[1], 10, 64)
	mode, err2 := strconv.ParseUint(f[2], 8, 32)
	secs, err3 := strconv.ParseFloat(f[3], 64)
	if err1 != nil || err2 != nil || err3 != nil || mode > 0o7777 {
		return workspace.Entry{}, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: "unreadable stat output"}
	}
	e := workspace.Entry{Name: path.Base(p), Path: p, Size: size, Mode: uint32(mode), MTime: time.UnixMilli(int64(secs * 1000)).UTC(), Type: "other"}
	switch f[0] {
	case "f":
		e.Type = "file"
	case "d":
		e.Type = "dir"
	case "l":
		e.Type = "symlink"
		e.SymlinkTarget = truncateUTF8(target, workspace.MaxPathBytes)
	}
	return e, nil
}

// runSandboxScript runs script in the sandbox (bash, no start-up files,
// at the workspace) within sandboxFileWait, and returns its stdout, of
// which it keeps at most keep bytes. Its exit codes sandboxFileMissing,
// IsDir and Denied become the matching *workspace.PathError for p.
func (m *Commands) runSandboxScript(ctx context.Context, p, op, script string, keep int64) ([]byte, error) {
	cr, spec, err := m.runner(sandbox.CommandSpec{Cmd: script})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, sandboxFileWait)
	defer cancel()
	done, err := m.probe(ctx, op)
	if err != nil {
		return nil, err
	}
	defer done()
	// What it keeps is charged to the session's memory budget: twice
	// keep, the most a growing buffer holds.
	charge := int(2 * keep)
	if !m.s.budget.TryAcquire(charge) {
		return nil, fmt.Errorf("sessions: %s %s: %w", op, p, ErrMemorySpent)
	}
	defer m.s.budget.Release(charge)
	c, release, err := m.launch(ctx, cr, spec, op)
	if err != nil {
		return nil, err
	}
	defer release()
	_ = c.CloseStdin()
	var out bytes.Buffer
	enough := false // keep bytes were read: the rest is not needed
	for {
		select {
		case o, ok := <-c.Output():
			if !ok {
				if enough {
					return out.Bytes(), nil
				}
				return sandboxScriptEnd(ctx, c.Exit(), p, op, out.Bytes())
			}
			if o.Stream != sandbox.Stdout || enough {
				continue
			}
			if room := keep - int64(out.Len()); int64(len(o.Data)) >= room {
				o.Data, enough = o.Data[:room], true
				_ = c.Kill()
			}
			out.Write(o.Data)
		case <-ctx.Done():
			_ = c.Kill()
			for range c.Output() { // until the launcher has ended
			}
			return nil, fmt.Errorf("sessions: %s %s: %w", op, p, ctx.Err())
		}
	}
}

// sandboxScriptEnd turns the ended script's exit into runSandboxScript's
// answer.
func sandboxScriptEnd(ctx context.Context, ex sandbox.CommandExit, p, op string, out []byte) ([]byte, error) {
	code := ex.Code
	switch code {
	case 0:
		return out, nil
	case sandboxFileMissing:
		return nil, &workspace.PathError{Kind: workspace.ErrNotFound, Path: p}
	case sandboxFileIsDir:
		return nil, &workspace.PathError{Kind: workspace.ErrIsDir, Path: p}
	case sandboxFileDenied:
		return nil, &workspace.PathError{Kind: workspace.ErrPermission, Path: p, Detail: "the sandbox's user may not read it"}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessions: %s %s: %w", op, p, err)
	}
	return nil, &workspace.PathError{Kind: workspace.ErrIO, Path: p, Detail: fmt.Sprintf("the read in the sandbox failed (exit %d)", code)}
}
