package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/glassroom/glassroom/kernel/kernels"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/snapshots"
	"github.com/glassroom/glassroom/workspace"
	"github.com/rs/zerolog"
)

// SnapshotStore keeps snapshots' archives and manifests (package
// snapshots' Store).
type SnapshotStore interface {
	Create(tenant string) (*snapshots.Writer, error)
	Get(tenant, id string) (snapshots.Info, error)
	Open(tenant, id string) (snapshots.Info, io.ReadCloser, error)
	Delete(tenant, id string) error
}

// Snapshots captures sessions into a SnapshotStore and starts sessions
// from what it keeps: snapshots, and forks through them.
//
// A snapshot is the session's workspace, archived by tar in its sandbox,
// and, for each of its contexts whose kernel can (kernels.Snapshot), the
// kernel's variables, written by the kernel into the workspace's
// snapshotDir before the archive and removed after. A restore runs the
// other way in the new session's sandbox: tar extracts the archive, each
// kernel loads its state. Nothing of a snapshot but the manifest the
// gateway wrote is decoded outside a sandbox. Safe for concurrent use; it
// owns no goroutine beyond a call.
type Snapshots struct {
	mgr   *Manager
	store SnapshotStore
	log   zerolog.Logger
}

// ErrNoSnapshots is the error of a manager that keeps no snapshots
// (Config.Snapshots).
var ErrNoSnapshots = errors.New("sessions: this gateway keeps no snapshots")

// SnapshotsOf returns m's snapshots, nil without a store
// (Config.Snapshots).
func SnapshotsOf(m *Manager) *Snapshots { return m.snaps }

// snapshotDir is where kernels write their state, in the workspace.
const snapshotDir = ".glassroom-snapshot"

// Bounds of what a kernel reports.
const (
	maxReportBytes = 1 << 20
	maxReportNames = 10000
	maxNameBytes   = 256
	maxReasonBytes = 300
)

// kernelReport is a kernel's report of a capture or a restore
// (kernels.Snapshot).
type kernelReport struct {
	Captured   []string               `json:"captured"`
	Uncaptured []snapshots.Uncaptured `json:"uncaptured"`
	Restored   []string               `json:"restored"`
	Failed     []snapshots.Uncaptured `json:"failed"`
	Error      string                 `json:"error"`
}

// Capture snapshots s, of tenant, into the store: its contexts' kernels
// write their state in their turn (after what is queued), then the
// workspace is archived. A kernel whose variables cannot be captured, or
// whose capture fails, is in the manifest with the reason.
func (sn *Snapshots) Capture(ctx context.Context, tenant string, s *Session, name string) (snapshots.Info, error) {
	if !ValidSnapshotName(name) {
		return snapshots.Info{}, invalid("snapshot name: 1 to 128 of A-Z a-z 0-9 . _ -")
	}
	return sn.capture(ctx, tenant, s, "", name)
}

// ValidSnapshotName reports whether name is "" or 1 to 128 of A-Z a-z
// 0-9 . _ -.
func ValidSnapshotName(name string) bool {
	if len(name) > 128 {
		return false
	}
	for _, c := range name {
		if c != '.' && c != '_' && c != '-' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// snapshotForHibernation is the Purpose of a hibernated session's
// snapshot (the tenant's lists leave it out).
const snapshotForHibernation = "hibernation"

// snapshotForFork is the Purpose of a fork's capture (deleted once the
// forks have their copies).
const snapshotForFork = "fork"

// capture is Capture of a snapshot for purpose (snapshots.Info.Purpose),
// named name.
func (sn *Snapshots) capture(ctx context.Context, tenant string, s *Session, purpose, name string) (snapshots.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, sn.mgr.cfg.SnapshotTimeout)
	defer cancel()
	w, err := sn.store.Create(tenant)
	if err != nil {
		return snapshots.Info{}, err
	}
	defer w.Abort()
	_ = s.files.Remove(snapshotDir)
	defer func() { _ = s.files.Remove(snapshotDir) }()
	manifest := snapshots.Info{Session: s.id, Purpose: purpose, Name: name}
	for i, c := range s.ctxs.List() {
		k, err := s.ctxs.Get(c.ID)
		if err != nil {
			continue // deleted meanwhile
		}
		manifest.Contexts = append(manifest.Contexts, sn.captureKernel(ctx, k, c, fmt.Sprintf("k%d", i)))
	}
	start := time.Now()
	err = s.cmds.pipeOut(ctx, "snapshot: archive the workspace", archiveScript(s.volumes), w, 1) // 1: a file changed as it was read
	if err != nil {
		if errors.Is(err, snapshots.ErrTooLarge) {
			return snapshots.Info{}, fmt.Errorf("sessions: snapshot: %w", errors.Unwrap(errors.Unwrap(err)))
		}
		return snapshots.Info{}, err
	}
	in, err := w.Commit(manifest)
	if err != nil {
		return snapshots.Info{}, err
	}
	sn.log.Info().Str("session", s.id).Str("snapshot", in.ID).Int64("bytes", in.SizeBytes).Dur("archive", time.Since(start)).Msg("snapshot taken")
	return in, nil
}

// archiveScript is the script that writes the workspace as a tar file
// to stdout, without the volumes mounted in it (name → path in the
// sandbox): they are the tenant's, not the session's.
func archiveScript(volumes map[string]string) string {
	// The workspace's entries, not "." itself: a restore must not change
	// the new workspace's own mode or owner (a pod's is not the user's).
	var b strings.Builder
	b.WriteString("set -o pipefail; cd " + shellQuote(sandbox.WorkDir) + " && find . -mindepth 1 -maxdepth 1 -print0 | " +
		"tar --create --file=- --null --files-from=- --warning=no-file-changed --warning=no-file-removed")
	for _, p := range volumes {
		if rel, ok := workspace.RelativeToRoot(p); ok && rel != "" {
			b.WriteString(" --exclude=" + shellQuote("./"+rel))
		}
	}
	return b.String()
}

// captureKernel has k write its state as name (in snapshotDir) and
// returns its part of the manifest.
func (sn *Snapshots) captureKernel(ctx context.Context, k *Kernel, c ContextInfo, name string) snapshots.Context {
	out := snapshots.Context{Context: c.ID, Language: c.Language, Cwd: c.Cwd, Default: c.Default, Captured: []string{}, Uncaptured: []snapshots.Uncaptured{}}
	def, ok := kernels.Lookup(k.kernel)
	if !ok || def.Snapshot == nil {
		out.Uncaptured = append(out.Uncaptured, snapshots.Uncaptured{Name: "*",
			Reason: "the " + k.kernel + " kernel's variables cannot be captured: the snapshot holds the workspace only"})
		return out
	}
	var rep kernelReport
	if err := sn.runSnippet(ctx, k, def.Snapshot, def.Snapshot.Capture(sandbox.WorkDir+"/"+snapshotDir, name), name, &rep); err != nil {
		out.Uncaptured = append(out.Uncaptured, snapshots.Uncaptured{Name: "*", Reason: "the capture failed: " + err.Error()})
		return out
	}
	out.State = name
	out.Captured = cleanNames(rep.Captured)
	out.Uncaptured = cleanUncaptured(rep.Uncaptured)
	return out
}

// runSnippet runs one of k's snapshot snippets as a silent execution
// without history, in k's turn, and reads its report (snapshotDir/name.json).
// ctx bounds it (capture's and Restore's have Config.SnapshotTimeout's
// deadline): the execution's timeout is what is left of it.
func (sn *Snapshots) runSnippet(ctx context.Context, k *Kernel, lang *kernels.Snapshot, code, name string, rep *kernelReport) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(sn.mgr.cfg.SnapshotTimeout)
	}
	timeout := min(time.Until(deadline), k.cfg.MaxExecTimeout)
	if timeout < time.Second {
		return context.DeadlineExceeded
	}
	e, err := k.Execute(ctx, ExecRequest{Code: code, Silent: !lang.Loud, NoHistory: true, Timeout: timeout})
	if err != nil {
		return err
	}
	if e.Status != StatusOK {
		why := string(e.Status)
		if e.Error != nil {
			why = e.Error.Name + ": " + e.Error.Value
		}
		return errors.New(truncateUTF8(why, maxReasonBytes))
	}
	f, _, err := k.s.files.OpenFile(snapshotDir + "/" + name + ".json")
	if err != nil {
		return fmt.Errorf("the kernel wrote no report: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReportBytes+1))
	if err != nil {
		return fmt.Errorf("the kernel's report: %w", err)
	}
	if len(b) > maxReportBytes {
		return errors.New("the kernel's report is too large")
	}
	if err := json.Unmarshal(b, rep); err != nil {
		return fmt.Errorf("the kernel's report is not JSON: %w", err)
	}
	return nil
}

// cleanNames keeps at most maxReportNames names of valid UTF-8 and at
// most maxNameBytes: a report is the kernel's, hostile.
func cleanNames(in []string) []string {
	out := make([]string, 0, min(len(in), maxReportNames))
	for _, n := range in {
		if len(out) == maxReportNames {
			break
		}
		if n != "" && len(n) <= maxNameBytes && utf8.ValidString(n) {
			out = append(out, n)
		}
	}
	return out
}

func cleanUncaptured(in []snapshots.Uncaptured) []snapshots.Uncaptured {
	out := make([]snapshots.Uncaptured, 0, min(len(in), maxReportNames))
	for _, u := range in {
		if len(out) == maxReportNames {
			break
		}
		if u.Name != "" && len(u.Name) <= maxNameBytes && utf8.ValidString(u.Name) {
			out = append(out, snapshots.Uncaptured{Name: u.Name, Reason: truncateUTF8(u.Reason, maxReasonBytes)})
		}
	}
	return out
}

// RestoreReport says what a new session got of its snapshot.
type RestoreReport struct {
	Snapshot string `json:"snapshot_id"`
	// Error: the workspace could not be restored (the archive is
	// corrupt); the kernels then start empty.
	Error    string            `json:"error,omitempty"`
	Contexts []RestoredContext `json:"contexts"`
}

// RestoredContext is one context's restore.
type RestoredContext struct {
	Context  string                 `json:"context"` // its id in the new session
	From     string                 `json:"from"`    // its id in the snapshot
	Language string                 `json:"language"`
	Restored []string               `json:"restored"`
	Failed   []snapshots.Uncaptured `json:"failed"`
	// Error: nothing of its variables was restored, and why (its kernel
	// runs, empty).
	Error string `json:"error,omitempty"`
}

// CreateFrom creates a session of tenant (opts; its language, when not
// given, is the snapshot's first context's) and restores snapshot id into
// it. ErrNotFound of package snapshots: no such snapshot of tenant. A
// snapshot that cannot be restored (corrupt, forged) still gives the
// session, with the reason in the report.
func (sn *Snapshots) CreateFrom(ctx context.Context, tenant string, opts CreateOptions, id string) (*Session, *RestoreReport, error) {
	in, err := sn.store.Get(tenant, id)
	if err != nil {
		return nil, nil, err
	}
	if opts.Kernel == "" && opts.Template == "" && len(in.Contexts) > 0 {
		opts.Kernel = in.Contexts[0].Language
	}
	s, err := sn.mgr.Create(ctx, tenant, opts)
	if err != nil {
		return nil, nil, err
	}
	rep, err := sn.Restore(ctx, tenant, s, id)
	if err != nil {
		_ = sn.mgr.Delete(context.WithoutCancel(ctx), tenant, s.ID())
		return nil, nil, err
	}
	return s, rep, nil
}

// Restore restores snapshot id of tenant into s: its workspace, then each
// of its contexts in a context of s (the first for the first when their
// languages agree, else the language's default or a new one). Errors:
// only that the snapshot is gone or ctx ended; what the snapshot's
// contents did is in the report.
func (sn *Snapshots) Restore(ctx context.Context, tenant string, s *Session, id string) (*RestoreReport, error) {
	ctx, cancel := context.WithTimeout(ctx, sn.mgr.cfg.SnapshotTimeout)
	defer cancel()
	in, archive, err := sn.store.Open(tenant, id)
	if err != nil {
		return nil, err
	}
	defer archive.Close()
	rep := &RestoreReport{Snapshot: id, Contexts: []RestoredContext{}}
	_ = s.files.Remove(snapshotDir)
	defer func() { _ = s.files.Remove(snapshotDir) }()
	err = s.cmds.pipeIn(ctx, "snapshot: restore the workspace",
		"exec tar --extract --file=- --directory="+shellQuote(sandbox.WorkDir)+" --no-same-owner --no-overwrite-dir --delay-directory-restore",
		archive)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		rep.Error = "the snapshot's workspace could not be restored: " + err.Error()
	}
	// Each context's kernel starts and loads its state at once (an R
	// kernel takes seconds to start; the others need not wait for it).
	rep.Contexts = make([]RestoredContext, len(in.Contexts))
	var wg sync.WaitGroup
	for i, c := range in.Contexts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep.Contexts[i] = sn.restoreContext(ctx, s, i, c, rep.Error == "")
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sessions: restore: %w", err)
	}
	return rep, nil
}

// restoreContext restores c, the i-th context of a snapshot, into s; the
// kernel loads its state when withState.
func (sn *Snapshots) restoreContext(ctx context.Context, s *Session, i int, c snapshots.Context, withState bool) RestoredContext {
	out := RestoredContext{From: c.Context, Language: c.Language, Restored: []string{}, Failed: []snapshots.Uncaptured{}}
	var k *Kernel
	var err error
	switch {
	case i == 0 && s.first.kernel == c.Language:
		k = s.first
	case c.Default:
		k, err = s.ctxs.Resolve(ctx, "", c.Language)
	default:
		var info ContextInfo
		if info, err = s.ctxs.Create(ctx, c.Language, c.Cwd); err == nil {
			k, err = s.ctxs.Get(info.ID)
		}
	}
	if err != nil {
		out.Error = "no context for it: " + err.Error()
		return out
	}
	out.Context = k.ID()
	def, ok := kernels.Lookup(k.kernel)
	switch {
	case c.State == "":
		out.Error = "its variables were not captured"
		return out
	case !withState:
		out.Error = "its state was in the workspace, which could not be restored"
		return out
	case !ok || def.Snapshot == nil:
		out.Error = "the " + k.kernel + " kernel cannot restore variables"
		return out
	}
	var rep kernelReport
	if err := sn.runSnippet(ctx, k, def.Snapshot, def.Snapshot.Restore(sandbox.WorkDir+"/"+snapshotDir, c.State), c.State, &rep); err != nil {
		out.Error = "the restore failed: " + err.Error()
		return out
	}
	if rep.Error != "" {
		out.Error = truncateUTF8(rep.Error, 4*maxReasonBytes)
		return out
	}
	out.Restored = cleanNames(rep.Restored)
	if len(rep.Restored) == 0 && len(rep.Failed) == 0 { // an all-or-nothing kernel (bash): all it captured
		out.Restored = c.Captured
	}
	out.Failed = cleanUncaptured(rep.Failed)
	return out
}

// Forked is one fork's outcome: a session and its restore, or the error.
type Forked struct {
	Session *Session
	Restore *RestoreReport
	Err     error
}

// Fork captures s, of tenant, and starts count sessions from the capture
// at once, each as the source's template, language, limits, network, idle
// timeout, lifecycle, metadata and environment (the one it was created
// with; none for a session restored after a restart, whose sandbox alone
// keeps it); each succeeds or fails on its own. The
// capture is deleted after (it holds the source's state: the forks have
// their copies). The source goes on.
func (sn *Snapshots) Fork(ctx context.Context, tenant string, s *Session, count int) (snapshots.Info, []Forked, error) {
	if count < 1 || count > sn.mgr.cfg.MaxForks {
		return snapshots.Info{}, nil, invalid("count must be within 1..%d", sn.mgr.cfg.MaxForks)
	}
	in, err := sn.capture(ctx, tenant, s, snapshotForFork, "")
	if err != nil {
		return snapshots.Info{}, nil, err
	}
	defer func() {
		if err := sn.store.Delete(tenant, in.ID); err != nil {
			sn.log.Warn().Err(err).Str("snapshot", in.ID).Msg("deleting a fork's capture failed")
		}
	}()
	info := s.Info()
	opts := CreateOptions{Kernel: s.first.kernel, Template: s.template, Limits: info.Limits, IdleTimeout: time.Duration(info.IdleTimeoutS) * time.Second,
		Metadata: copyMetadata(s.metadata), Lifecycle: s.lifecycle, PrivatePreviews: s.privatePreviews, Env: s.env}
	if info.Network != nil {
		opts.Network = *info.Network
	}
	out := make([]Forked, count)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					out[i].Err = fmt.Errorf("sessions: fork: panic: %v", r)
				}
			}()
			out[i].Session, out[i].Restore, out[i].Err = sn.CreateFrom(ctx, tenant, opts, in.ID)
		}()
	}
	wg.Wait()
	return in, out, nil
}
