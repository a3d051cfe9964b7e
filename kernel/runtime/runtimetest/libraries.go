package runtimetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/images/python"
	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// importAll imports every module named in the JSON list it is formatted
// with and prints, as JSON after RESULT, how many it tried and the
// failures.
const importAll = `import importlib, json
tried, failed = 0, {}
for name in %s:
    tried += 1
    try:
        importlib.import_module(name)
    except BaseException as e:
        failed[name] = "%%s: %%s" %% (type(e).__name__, e)
print("RESULT" + json.dumps({"tried": tried, "failed": failed}))`

// seabornPlot is the check: the common stack imports together and
// a seaborn plot comes out as the inline backend's PNG.
const seabornPlot = `import pandas, matplotlib.pyplot, scipy, sklearn, seaborn, plotly
import matplotlib.pyplot as plt
df = pandas.DataFrame({"x": [1, 2, 3, 4, 5, 6], "y": [2.0, 4.1, 2.9, 5.2, 6.1, 5.8], "g": list("ababab")})
seaborn.regplot(data=df, x="x", y="y")
seaborn.scatterplot(data=df, x="x", y="y", hue="g")
plt.show()`

// cjkTitle draws a figure with Chinese, Japanese and Korean text, records
// every warning matplotlib gives while drawing it (a glyph no font has is a
// "Glyph ... missing from ..." warning), prints them and the font files that
// serve the title as JSON after RESULT, then shows the figure.
const cjkTitle = `import json, warnings
import matplotlib.pyplot as plt
from matplotlib import font_manager
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fig, ax = plt.subplots()
    ax.bar(["一月", "二月", "三月"], [3, 5, 4])
    ax.set_title("每月销售额 (월별 매출, 月次売上)")
    ax.set_xlabel("月份")
    ax.set_ylabel("销售额 / 万元")
    fig.canvas.draw()
fonts = font_manager.fontManager._find_fonts_by_props(ax.title.get_fontproperties())
print("RESULT" + json.dumps({"warnings": [str(w.message) for w in caught], "fonts": [str(f) for f in fonts]}))
plt.show()`

// widgetsCheck is the Jupyter side of the kernel: ipywidgets 8 (widget
// protocol 2.1, through the comm package or ipykernel's comms), a widget
// that opens its comm, a tqdm.notebook bar (a widget too), and debugpy as
// ipykernel sees it. It prints what it found as JSON after RESULT.
const widgetsCheck = `import json
import ipywidgets
assert ipywidgets.__version__.startswith("8."), "ipywidgets %s, want 8" % ipywidgets.__version__
import comm, debugpy, ipykernel
from ipywidgets._version import __protocol_version__
from ipykernel.debugger import _is_debugpy_available
from tqdm.notebook import tqdm
slider = ipywidgets.IntSlider(value=3)
bar = tqdm(range(3))
for _ in bar:
    pass
print("RESULT" + json.dumps({
    "ipywidgets": ipywidgets.__version__, "protocol": __protocol_version__,
    "target": slider.comm.target_name, "comm_id": slider.comm.comm_id,
    "bar": type(bar.container).__name__, "bar_is_box": isinstance(bar.container, ipywidgets.HBox),
    "bar_comm": bar.container.comm.comm_id,
    "debugpy": debugpy.__version__, "ipykernel_debugger": _is_debugpy_available,
}))`

// RunLibraries checks the python3 kernel's libraries on rt
// (images/python/libraries.txt): every module on the list imports; the
// common stack imports together and a seaborn plot gives an image/png; a
// matplotlib figure with a Chinese title draws without a missing glyph;
// ipywidgets is 8 (protocol 2.1: bookworm's 6 speaks 2.0) and a widget
// opens its comm, a tqdm.notebook bar is a widget, and ipykernel's
// debugger starts debugpy in the sandbox (a debug_request "initialize"
// on the control channel succeeds).
func RunLibraries(t *testing.T, rt Starter, id string) {
	k := Start(t, rt, sandbox.Spec{ID: id, Kernel: "python3"})
	t.Run("every listed module imports", func(t *testing.T) {
		mods := python.Modules()
		list, _ := json.Marshal(mods)
		out, ename := k.Run(t, fmt.Sprintf(importAll, list))
		if ename != "" {
			t.Fatalf("the import check failed: %s", out)
		}
		var got struct {
			Tried  int
			Failed map[string]string
		}
		if err := json.Unmarshal([]byte(result(out)), &got); err != nil {
			t.Fatalf("the import check printed %q: %v", out, err)
		}
		for _, name := range mods {
			if why, ok := got.Failed[name]; ok {
				t.Errorf("import %s: %s (install images/python/libraries.txt's packages: scripts/install-deps.sh, or rebuild the image)", name, why)
			}
		}
		if got.Tried != len(mods) || len(got.Failed) != 0 {
			t.Fatalf("the kernel tried %d imports (want %d), %d failed", got.Tried, len(mods), len(got.Failed))
		}
		t.Logf("%d modules import: %s", got.Tried, strings.Join(mods, " "))
	})
	t.Run("seaborn plot is a PNG", func(t *testing.T) {
		png, out := runPNG(t, k, seabornPlot)
		if png == nil {
			t.Fatalf("no image/png from a seaborn plot; output: %s", out)
		}
		t.Logf("a %d-byte PNG", len(png))
	})
	t.Run("ipywidgets 8, tqdm.notebook and the debugger", func(t *testing.T) {
		out, ename := k.Run(t, widgetsCheck)
		if ename != "" {
			t.Fatalf("the widgets check failed (install images/python/trixie.txt's packages: scripts/install-deps.sh, or rebuild the image): %s", out)
		}
		var got struct {
			IPyWidgets        string `json:"ipywidgets"`
			Protocol          string `json:"protocol"`
			Target            string `json:"target"`
			CommID            string `json:"comm_id"`
			Bar               string `json:"bar"`
			BarIsBox          bool   `json:"bar_is_box"`
			BarComm           string `json:"bar_comm"`
			Debugpy           string `json:"debugpy"`
			IPykernelDebugger bool   `json:"ipykernel_debugger"`
		}
		if err := json.Unmarshal([]byte(result(out)), &got); err != nil {
			t.Fatalf("the widgets check printed %q: %v", out, err)
		}
		if !strings.HasPrefix(got.IPyWidgets, "8.") || got.Protocol != "2.1.0" {
			t.Errorf("ipywidgets %s speaks widget protocol %s; want ipywidgets 8 (protocol 2.1.0), which JupyterLab and the HTML widget manager speak (images/python/trixie.txt)", got.IPyWidgets, got.Protocol)
		}
		if got.Target != "jupyter.widget" || got.CommID == "" {
			t.Errorf("the IntSlider's comm: target %q, id %q; want jupyter.widget and an id", got.Target, got.CommID)
		}
		if !got.BarIsBox || got.BarComm == "" {
			t.Errorf("the tqdm.notebook bar is a %q with comm %q; want an ipywidgets.HBox with a comm", got.Bar, got.BarComm)
		}
		if !got.IPykernelDebugger {
			t.Errorf("ipykernel finds no debugpy (debugpy %s imports)", got.Debugpy)
		}
		// ipykernel starts debugpy (a listener on 127.0.0.1 and its
		// adapter process) at the first "initialize" and forwards it.
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		reply, err := k.Client.Request(ctx, kernel.Control, "debug_request", map[string]any{
			"type": "request", "seq": 1, "command": "initialize",
			"arguments": map[string]any{"clientID": "glassroom", "adapterID": "python", "pathFormat": "path",
				"linesStartAt1": true, "columnsStartAt1": true},
		})
		if err != nil {
			t.Fatalf("debug_request initialize: %v", err)
		}
		var dap struct {
			Success bool            `json:"success"`
			Command string          `json:"command"`
			Message string          `json:"message"`
			Body    json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(reply.Content, &dap); err != nil || !dap.Success || dap.Command != "initialize" {
			t.Fatalf("debug_reply to initialize: %s (%v); want success: debugpy must start in the sandbox", reply.Content, err)
		}
		info, err := k.Client.KernelInfo(ctx)
		if err != nil {
			t.Fatalf("kernel_info: %v", err)
		}
		var ki struct {
			Debugger *bool `json:"debugger"`
		}
		_ = json.Unmarshal(info, &ki)
		debugger := "absent"
		if ki.Debugger != nil {
			debugger = strconv.FormatBool(*ki.Debugger)
		}
		t.Logf("ipywidgets %s (protocol %s), comm %s, tqdm bar %s, debugpy %s; debug_request initialize succeeds; kernel_info_reply's debugger field: %s",
			got.IPyWidgets, got.Protocol, got.CommID, got.Bar, got.Debugpy, debugger)
	})
	t.Run("Chinese title has its glyphs", func(t *testing.T) {
		png, out := runPNG(t, k, cjkTitle)
		var got struct {
			Warnings []string
			Fonts    []string
		}
		if err := json.Unmarshal([]byte(result(out)), &got); err != nil {
			t.Fatalf("the figure printed %q: %v", out, err)
		}
		for _, w := range got.Warnings {
			t.Errorf("drawing the figure warned: %s", w)
		}
		if png == nil {
			t.Fatalf("no image/png from the figure; output: %s", out)
		}
		t.Logf("title fonts %v; a %d-byte PNG", got.Fonts, len(png))
	})
}

// runPNG runs code and returns the last image/png it displayed (nil if
// none) and its text output.
func runPNG(t *testing.T, k Kernel, code string) (png []byte, out string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var b strings.Builder
	var data json.RawMessage
	reply, err := k.Client.Execute(ctx, code, kernel.ExecuteOptions{}, func(e kernel.Event) {
		switch e.Kind {
		case kernel.EventStream:
			b.WriteString(e.Text)
		case kernel.EventDisplay, kernel.EventResult:
			if e.Data["image/png"] != nil {
				data = e.Data["image/png"]
			}
		case kernel.EventError:
			b.WriteString(e.EName + ": " + e.EValue + "\n" + strings.Join(e.Traceback, "\n"))
		}
	})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if reply.Status != "ok" {
		t.Fatalf("execution failed (%s %s): %s", reply.EName, reply.EValue, b.String())
	}
	var s string
	if data == nil || json.Unmarshal(data, &s) != nil {
		return nil, b.String()
	}
	png, err = base64.StdEncoding.DecodeString(strings.ReplaceAll(s, "\n", ""))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("image/png is not a PNG (%v): %.40q", err, png)
	}
	return png, b.String()
}

// result is what follows "RESULT" on its line in out (the checks' code
// prints it; warnings on stderr may come before or after).
func result(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if r, ok := strings.CutPrefix(line, "RESULT"); ok {
			return r
		}
	}
	return ""
}
