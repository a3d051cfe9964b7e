package gateway_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
)

// TestPoolPreload: a pooled kernel has imported Config.PoolPreload before
// a session takes it (numpy, pandas and matplotlib.pyplot are in
// sys.modules; so are they in a kernel forked from the local runtime's
// template, pooled or not), yet the session sees what a cold one does: the same
// namespace, execution count 1, and a plot comes back as a PNG; two
// pooled kernels' random generators differ.
func TestPoolPreload(t *testing.T) {
	for name, rt := range runtimes() {
		if name == "docker-runsc" {
			continue // the preload is the manager's, the same on every runtime
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, rt(t), sessions.Config{Pool: 2, PoolPreload: []string{"numpy", "pandas", "matplotlib.pyplot"}})
			waitPoolReady(t, e.mgr, 2)
			pooledA := e.create(keyA, nil)
			pooledB := e.create(keyA, nil)
			cold := e.create(keyA, map[string]any{"env": map[string]string{"COLD": "1"}}) // an env: never pooled

			const probe = "import sys\nprint(sorted(m for m in ('numpy', 'pandas', 'matplotlib.pyplot') if m in sys.modules))\nprint(sorted(k for k in globals() if not k.startswith('_')))"
			x := e.exec(keyA, pooledA.ID, probe, 60)
			c := e.exec(keyA, cold.ID, probe, 60)
			if x.Status != "ok" || c.Status != "ok" {
				t.Fatalf("probe: pooled %+v, cold %+v", x, c)
			}
			pooledMods, pooledNames, _ := strings.Cut(x.Stdout, "\n")
			coldMods, coldNames, _ := strings.Cut(c.Stdout, "\n")
			if pooledMods != "['matplotlib.pyplot', 'numpy', 'pandas']" {
				t.Fatalf("the pooled kernel has not preloaded: %q", pooledMods)
			}
			// A cold kernel imports nothing, unless it is forked from the
			// local runtime's template (root: --fork-server), which has
			// imported the preload too.
			wantCold := "[]"
			if name == "local" && os.Geteuid() == 0 {
				wantCold = pooledMods
			}
			if coldMods != wantCold {
				t.Fatalf("the cold kernel imported %s, want %s", coldMods, wantCold)
			}
			if pooledNames != coldNames || x.ExecutionCount != 1 || c.ExecutionCount != 1 {
				t.Fatalf("pooled namespace %q (cell %d), cold %q (cell %d)", pooledNames, x.ExecutionCount, coldNames, c.ExecutionCount)
			}

			plot := e.exec(keyA, pooledA.ID, "import numpy as np, pandas as pd, matplotlib.pyplot as plt\ndf = pd.DataFrame({'x': np.arange(10)})\nplt.plot(df.x, df.x ** 2)\nplt.show()", 60)
			png := false
			for _, ev := range plot.Outputs {
				var data map[string]json.RawMessage
				_ = json.Unmarshal(ev.Data, &data)
				png = png || len(data["image/png"]) > 100
			}
			if plot.Status != "ok" || !png || plot.ExecutionCount != 2 {
				t.Fatalf("the first analysis cell: %+v", plot)
			}

			draw := "import numpy as np, random\nprint(np.random.rand(), random.random())"
			a, b := e.exec(keyA, pooledA.ID, draw, 60), e.exec(keyA, pooledB.ID, draw, 60)
			if a.Status != "ok" || b.Status != "ok" || a.Stdout == b.Stdout {
				t.Fatalf("two pooled kernels drew %q and %q", a.Stdout, b.Stdout)
			}
		})
	}
}

func waitPoolReady(t *testing.T, m *sessions.Manager, n int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); m.Pool().Ready < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool never filled: %+v", m.Pool())
		}
	}
}
