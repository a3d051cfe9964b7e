package sessions

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// MaxPoolPreload bounds Config.PoolPreload.
const MaxPoolPreload = 32

// validModuleName reports whether s is a dotted Python module name of
// ASCII identifiers (numpy, matplotlib.pyplot), at most 200 bytes.
func validModuleName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || (part[0] >= '0' && part[0] <= '9') {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}

// preloadCode is the code that imports mods (valid module names) without
// binding a name in the kernel's namespace: one expression statement,
// whose value a silent execution neither shows nor keeps.
func preloadCode(mods []string) string {
	quoted := make([]string, len(mods))
	for i, m := range mods {
		quoted[i] = strconv.Quote(m)
	}
	return "[__import__('importlib').import_module(m) for m in (" + strings.Join(quoted, ", ") + ",)]"
}

// startPooled starts a kernel for the warm pool: startKernel, then the
// imports of Config.PoolPreload, within the start timeout. A preload
// that fails in the kernel (a module not installed) is logged and the
// kernel kept: it is as clean as a cold one. A kernel that dies or does
// not answer is closed, and the start fails.
func (m *launcher) startPooled(ctx context.Context, spec sandbox.Spec) (*readyKernel, error) {
	k, err := m.startKernel(ctx, "", spec)
	if err != nil || len(m.cfg.PoolPreload) == 0 {
		return k, err
	}
	pctx, cancel := context.WithTimeout(ctx, m.cfg.StartTimeout)
	defer cancel()
	rep, err := k.conn.Execute(pctx, preloadCode(m.cfg.PoolPreload),
		kernel.ExecuteOptions{Silent: true, NoHistory: true}, func(kernel.Event) {})
	switch {
	case err != nil:
		k.close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("sessions: pool preload: %w", err)
	case rep.Status != "ok":
		m.log.Warn().Str("status", rep.Status).Str("error", rep.EName+": "+rep.EValue).
			Strs("modules", m.cfg.PoolPreload).Msg("warm pool: preload failed; the kernel is kept without it")
	}
	return k, nil
}
