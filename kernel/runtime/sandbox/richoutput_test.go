package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/testkit"
)

// richCheck runs in python3 after richoutput.py's definitions (with the
// host's matplotlib, Agg, and pandas): the chart JSON of a line, a bar and
// a pie figure, a figure of more points than the budget, a DataFrame's
// JSON, and one too large for a message.
const richCheck = `
import json, math
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
fig, ax = plt.subplots()
ax.plot([1, 2, 3], [4, 5, 6], label="s")
ax.set_title("Growth")
ax.set_xlabel("time (s)")
chart, n = chart_json(fig)
assert chart["type"] == "line" and chart["title"] == "Growth", chart
assert (chart["x_label"], chart["x_unit"]) == ("time (s)", "s"), chart
assert chart["elements"][0]["label"] == "s" and chart["elements"][0]["points"] == [[1, 4], [2, 5], [3, 6]], chart
assert n == len(dumps(chart).encode())
fig, ax = plt.subplots()
ax.bar(["a", "b"], [3, 7])
chart, _ = chart_json(fig)
assert chart["type"] == "bar" and [e["value"] for e in chart["elements"]] == [3, 7], chart
fig, ax = plt.subplots()
ax.pie([1, 3], labels=["x", "y"])
assert chart_json(fig)[0]["type"] == "pie"
fig, ax = plt.subplots()
ax.plot(range(50000), [math.sin(i / 100) for i in range(50000)])
chart, n = chart_json(fig)
assert chart.get("truncated") and len(chart["elements"][0]["points"]) <= MAX_POINTS and n <= MAX_BYTES, n
df = pd.DataFrame({"a": [1, 2, None], "b": ["x", "y", "z"]})
frame, _ = frame_json(df)
assert frame["columns"] == ["a", "b"] and frame["data"]["a"] == [1.0, 2.0, None] and not frame["truncated"], frame
big = pd.DataFrame({"c%d" % i: ["v" * 900] * 2000 for i in range(120)})
frame, n = frame_json(big)
assert frame["truncated"] and n <= MAX_BYTES and len(frame["columns"]) == FRAME_COLUMNS, (n, frame.get("note"))
print("ok")
`

// TestRichOutputExtracts: richoutput.py's chart and DataFrame JSON, in
// the fast tier (the browser test shows them end to end): the shapes a
// client reads, and the bounds (points, columns, bytes) that keep a
// message small.
func TestRichOutputExtracts(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import matplotlib, pandas").Run(); err != nil {
		testkit.Unavailable(t, "the host's matplotlib and pandas (scripts/install-deps.sh): %v", err)
	}
	path := filepath.Join(t.TempDir(), "richoutput.py")
	if err := os.WriteFile(path, []byte(richOutput), 0o600); err != nil {
		t.Fatal(err)
	}
	code := "import sys\nns = {'__name__': 'richoutput'}\nexec(compile(open(sys.argv[1]).read(), sys.argv[1], 'exec'), ns)\nglobals().update(ns)\n" + richCheck
	cmd := exec.Command("/usr/bin/python3", "-I", "-B", "-c", code, path)
	cmd.Env = append(os.Environ(), "MPLCONFIGDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("%v\n%.4000s", err, out)
	}
}
