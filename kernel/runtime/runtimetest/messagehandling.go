package runtimetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// quickHandlingCheck runs in the kernel. It prints "installed" when the
// launcher's quicker date parsing and cell_id answer are in place, then
// one line per header date on which the quick parser and jupyter_client's
// own (dateutil, kept for what fromisoformat refuses) disagree: in the
// value, the offset, the ISO form a reply carries back, or the error.
const quickHandlingCheck = `import inspect, warnings
warnings.simplefilter("ignore", DeprecationWarning)
from dateutil.parser import parse as _du
from ipykernel import kernelbase
from jupyter_client import jsonutil as _j
from jupyter_client.session import json_default
if "quicker_message_handling" in _j.parse_date.__qualname__ and "quicker_message_handling" in kernelbase._accepts_cell_id.__qualname__:
    print("installed")
def _slow(s):
    if s is None or not _j.ISO8601_PAT.match(s):
        return s
    return _j._ensure_tzinfo(_du(s))
def _outcome(f, s):
    try:
        d = f(s)
        return ("value", d, getattr(d, "utcoffset", lambda: None)(), json_default(d) if hasattr(d, "isoformat") else d)
    except Exception as e:
        return ("error", type(e).__name__)
for _s in ["2026-12-02T22:06:04.123Z", "2026-12-02T22:06:04.123456+00:00", "2026-12-02T22:06:04+0530",
           "2026-12-02T22:06:04.1", "2026-12-02T22:06:04.123456", "2026-12-02T22:06:04-07:00",
           "9999-12-31T23:59:59Z", "2026-02-30T22:06:04Z", "2026-12-02T24:00:00Z", "0000-01-01T00:00:00Z",
           "2026-12-02T22:06:04+2359", "not a date", "", None]:
    if _outcome(_j.parse_date, _s) != _outcome(_slow, _s):
        print("differs", repr(_s), _outcome(_j.parse_date, _s), _outcome(_slow, _s))
_shell = get_ipython()
for _m in (_shell.run_cell_async, _shell.run_cell, kernelbase.Kernel.do_execute, lambda code: None, lambda code, *, cell_id=None: None):
    _p = inspect.signature(_m).parameters
    _want = bool((_p.get("cell_id") and _p["cell_id"].kind == _p["cell_id"].KEYWORD_ONLY) or any(p.kind == p.VAR_KEYWORD for p in _p.values()))
    if bool(kernelbase._accepts_cell_id(_m)) != _want or bool(kernelbase._accepts_cell_id(_m)) != _want:
        print("cell_id differs", _m)
`

// QuickMessageHandling checks the launcher's two shortcuts in ipykernel's
// handling of every message: header dates parsed by fromisoformat, and
// whether a method takes cell_id asked once per function. Both must be
// installed, and must answer exactly what jupyter_client and ipykernel
// answer without them, for valid dates, invalid ones and non-dates. A
// reply's parent header (its date parsed and written back by the kernel)
// must still name the request.
func QuickMessageHandling(t *testing.T, rt Starter, id string) {
	k := Start(t, rt, sandbox.Spec{ID: id})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	reply, err := k.Client.Execute(ctx, quickHandlingCheck, kernel.ExecuteOptions{}, func(ev kernel.Event) {
		if ev.Kind == kernel.EventStream || ev.Kind == kernel.EventError {
			out.WriteString(ev.Text)
		}
	})
	if err != nil || reply.Status != "ok" {
		t.Fatalf("check: %v %+v\n%s", err, reply, out.String())
	}
	if got := out.String(); got != "installed\n" {
		t.Errorf("quick message handling: %q, want %q (installed, and no difference)", got, "installed\n")
	}
}
