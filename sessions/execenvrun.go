package sessions

import (
	"context"
	"strings"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/kernels"
)

// The worker's side of per-execution settings (execenv.go). Worker only.

// settingsTimeout bounds one apply or restore: a kernel that does not
// answer in time is restarted (then nothing of the settings remains).
const settingsTimeout = 30 * time.Second

// restoreAttempts is how often a restore is tried before the kernel is
// restarted instead: an interrupt meant for the code may reach the kernel
// only once the restore has begun.
const restoreAttempts = 3

// maxSettingsDetail bounds the kernel's explanation of a failed apply.
const maxSettingsDetail = 4 << 10

// silently runs code, one of the settings' snippets, on c as a silent
// execution without history. Stream output (the code's background output
// that arrives meanwhile, or the snippet's own complaint) goes to j as its
// own; the rest is dropped. It returns the reply and what the snippet said
// went wrong (its stderr, else the reply's error).
func (w *worker) silently(c KernelConn, j *job, lang kernels.Settings, code string) (*kernel.ExecuteReply, string, error) {
	ctx, cancel := context.WithTimeout(w.s.ctx, settingsTimeout)
	defer cancel()
	var stderr strings.Builder
	reply, err := c.Execute(ctx, code, kernel.ExecuteOptions{Silent: !lang.Loud, NoHistory: true}, func(ev kernel.Event) {
		if ev.Kind != kernel.EventStream {
			return
		}
		if ev.Name == "stderr" && stderr.Len() < maxSettingsDetail {
			stderr.WriteString(ev.Text)
		}
		w.onEvent(j, ev)
	})
	if err != nil {
		return nil, "", err
	}
	detail := strings.TrimSpace(stderr.String())
	if detail == "" {
		detail = strings.TrimSpace(reply.EValue)
	}
	return reply, truncateUTF8(detail, maxSettingsDetail), nil
}

// applySettings applies j's envs and cwd before its code. When it fails
// it reports j (having put back whatever it changed) and returns false.
func (w *worker) applySettings(c KernelConn, j *job, start time.Time) bool {
	lang, _ := settingsCode(w.s.kernel) // enqueue checked the kernel has them
	reply, detail, err := w.silently(c, j, lang, lang.Apply(j.req.settingsPairs(), j.req.Cwd))
	if err != nil {
		w.settingsLost(c, j, start, err, "the kernel did not apply the execution's envs and cwd")
		return false
	}
	if reply.Status == "ok" {
		return true
	}
	reason, ok := w.restoreSettings(c, j)
	if !ok {
		return false
	}
	status := StatusError
	if j.interrupted.Load() {
		status = StatusInterrupted
	}
	if lang.Explain != nil {
		detail = lang.Explain(reply.EValue, j.req.Cwd)
	}
	msg := "the execution's envs and cwd could not be applied: " + detail
	w.onEvent(j, kernel.Event{Kind: kernel.EventError, EName: "SettingsError", EValue: msg, Traceback: []string{"SettingsError: " + msg}})
	if reason == "" {
		reason = msg
	}
	w.report(j, start, status, nil, reason)
	w.end()
	w.setState(StateIdle, "")
	j.deliver()
	return false
}

// restoreSettings puts back what the apply of j's settings saved. When the
// kernel does not do it (it died, did not answer, or each attempt was cut
// short), the kernel is restarted instead, j's state is lost and reason
// says why. ok is false when j has been reported already (the session
// closed).
func (w *worker) restoreSettings(c KernelConn, j *job) (reason string, ok bool) {
	lang, _ := settingsCode(w.s.kernel)
	why := "the kernel did not put back the execution's envs and cwd"
	for range restoreAttempts {
		reply, detail, err := w.silently(c, j, lang, lang.Restore)
		if err != nil {
			if w.s.ctx.Err() != nil {
				j.lost()
				w.finish(j, time.Now(), StatusDied, nil, w.reason())
				return "", false
			}
			why += ": " + err.Error()
			break
		}
		if lang.Restored(reply.Status, reply.EName) {
			return "", true
		}
		why += ": " + detail
	}
	w.s.log.Warn().Str("why", why).Msg("restarting the kernel: an execution's settings were not put back")
	j.lost()
	if c.Err() != nil {
		w.recoverKernel(c)
	} else {
		_ = w.restartKernel(why)
	}
	return why + "; kernel restarted", true
}

// settingsLost ends j whose apply got no reply: the session closed, the
// kernel died, or it did not answer in time (then it is restarted, so
// nothing of the settings remains).
func (w *worker) settingsLost(c KernelConn, j *job, start time.Time, err error, what string) {
	j.lost()
	switch {
	case w.s.ctx.Err() != nil:
		w.finish(j, start, StatusDied, nil, w.reason())
	case c.Err() != nil:
		w.finish(j, start, StatusDied, nil, w.exitReason(err))
		w.recoverKernel(c)
	default:
		w.finish(j, start, StatusDied, nil, what+" in time; kernel restarted")
		_ = w.restartKernel(what + " in time")
	}
}
