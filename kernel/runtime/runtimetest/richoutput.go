package runtimetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// RichCell is one cell of the structured rich output table: code whose
// displays and results must carry Want, in order, each a JSON value that
// the structured output of that MIME type must contain (Contains).
type RichCell struct {
	Name string
	Code string
	MIME string   // sandbox.ChartMIME or sandbox.DataFrameMIME
	Want []string // one per display/result carrying MIME, in order
	// Beside is the MIME type every such bundle also carries (image/png
	// beside a chart, text/html beside a frame).
	Beside string
	// EName is the error the cell ends with ("" for none).
	EName string
	// Check, if set, looks further at each structured value.
	Check func(t *testing.T, v any)
}

// RichCells is the table every runtime runs (RichOutput): each chart
// type with real matplotlib, log scales, dates on an axis, a superchart,
// a chart in a cell that then fails, a line of a million points (cut),
// DataFrames (cut at 1000 rows; NaN, NaT, inf, timestamps as JSON).
func RichCells() []RichCell {
	const pre = "import matplotlib.pyplot as plt, numpy as np, pandas as pd, datetime as dt\n"
	chart, frame := sandbox.ChartMIME, sandbox.DataFrameMIME
	return []RichCell{
		{Name: "line on a log scale, units from labels", MIME: chart, Beside: "image/png", Code: pre + `
plt.plot([1, 10, 100], [1, 100, 10000], label="growth")
plt.yscale("log"); plt.title("Growth"); plt.xlabel("Time (s)"); plt.ylabel("Price [$]")
plt.show()`, Want: []string{`{"type": "line", "title": "Growth", "x_label": "Time (s)", "x_unit": "s", "y_label": "Price [$]", "y_unit": "$",
 "x_scale": "linear", "y_scale": "log", "y_ticks": [1, 10, 100, 1000, 10000], "y_tick_labels": ["10^0", "10^1", "10^2", "10^3", "10^4"],
 "elements": [{"label": "growth", "points": [[1, 1], [10, 100], [100, 10000]]}]}`}},
		{Name: "dates on the x axis", MIME: chart, Beside: "image/png", Code: pre + `
fig, ax = plt.subplots()
ax.plot(pd.date_range("2024-03-01", periods=3, freq="D"), [3.5, np.nan, 4.5], label="temp")
ax.set_title("Days")
plt.show()`, Want: []string{`{"type": "line", "title": "Days", "x_scale": "datetime", "y_scale": "linear", "x_label": null, "x_unit": null,
 "elements": [{"label": "temp", "points": [["2024-03-01T00:00:00", 3.5], ["2024-03-02T00:00:00", null], ["2024-03-03T00:00:00", 4.5]]}]}`},
			Check: func(t *testing.T, v any) {
				ticks, _ := v.(map[string]any)["x_ticks"].([]any)
				if len(ticks) == 0 {
					t.Fatalf("no x ticks: %v", v)
				}
				for _, tk := range ticks {
					if s, ok := tk.(string); !ok || !strings.HasPrefix(s, "2024-03-0") {
						t.Errorf("x tick %v is not an ISO date of the data", tk)
					}
				}
			}},
		{Name: "scatter", MIME: chart, Beside: "image/png", Code: pre + `
plt.scatter([1, 2, 3], [9, 4, 1], label="pts"); plt.xscale("symlog"); plt.show()`,
			Want: []string{`{"type": "scatter", "x_scale": "symlog", "elements": [{"label": "pts", "points": [[1, 9], [2, 4], [3, 1]]}]}`}},
		{Name: "grouped bars", MIME: chart, Beside: "image/png", Code: pre + `
fig, ax = plt.subplots()
x = np.arange(3)
ax.bar(x - 0.2, [1, 2, 3], 0.4, label="Men")
ax.bar(x + 0.2, [4, 5, 6], 0.4, label="Women")
ax.set_xticks(x, ["A", "B", "C"]); ax.set_title("Groups"); ax.set_ylabel("Score")
plt.show()`, Want: []string{`{"type": "bar", "title": "Groups", "y_label": "Score", "y_unit": null, "x_ticks": [0, 1, 2], "x_tick_labels": ["A", "B", "C"],
 "elements": [{"label": "A", "group": "Men", "value": 1}, {"label": "B", "group": "Men", "value": 2}, {"label": "C", "group": "Men", "value": 3},
  {"label": "A", "group": "Women", "value": 4}, {"label": "B", "group": "Women", "value": 5}, {"label": "C", "group": "Women", "value": 6}]}`}},
		{Name: "horizontal bars on a categorical axis", MIME: chart, Beside: "image/png", Code: pre + `
plt.barh(["north", "south"], [7, 8], label="sales"); plt.show()`,
			Want: []string{`{"type": "bar", "y_scale": "categorical", "y_tick_labels": ["north", "south"],
 "elements": [{"label": "north", "group": "sales", "value": 7}, {"label": "south", "group": "sales", "value": 8}]}`}},
		{Name: "pie", MIME: chart, Beside: "image/png", Code: pre + `
plt.pie([90, 10], labels=["No", "Yes"]); plt.title("Wake up early?"); plt.show()`,
			Want: []string{`{"type": "pie", "title": "Wake up early?", "elements": [{"label": "No", "angle": 324, "radius": 1}, {"label": "Yes", "angle": 36, "radius": 1}]}`}},
		{Name: "box and whisker", MIME: chart, Beside: "image/png", Code: pre + `
fig, ax = plt.subplots()
ax.boxplot([[1, 2, 3, 4, 5, 20], [2, 3, 4, 5, 6]])
ax.set_xticks([1, 2], ["A", "B"])  # boxplot's labels= is tick_labels= from matplotlib 3.9
ax.set_xlabel("Class"); ax.set_ylabel("Score")
plt.show()`, Want: []string{`{"type": "box_and_whisker", "x_label": "Class", "y_label": "Score", "elements": [
 {"label": "A", "min": 1, "first_quartile": 2.25, "median": 3.5, "third_quartile": 4.75, "max": 5, "outliers": [20]},
 {"label": "B", "min": 2, "first_quartile": 3, "median": 4, "third_quartile": 5, "max": 6, "outliers": []}]}`}},
		{Name: "superchart", MIME: chart, Beside: "image/png", Code: pre + `
fig, axs = plt.subplots(1, 2)
fig.suptitle("Two")
axs[0].plot([0, 1], [2, 3]); axs[0].set_title("Left")
axs[1].bar(["x", "y"], [1, 2]); axs[1].set_title("Right")
plt.show()`, Want: []string{`{"type": "superchart", "title": "Two", "elements": [
 {"type": "line", "title": "Left", "elements": [{"label": "", "points": [[0, 2], [1, 3]]}]},
 {"type": "bar", "title": "Right", "elements": [{"label": "x", "group": "", "value": 1}, {"label": "y", "group": "", "value": 2}]}]}`}},
		{Name: "a chart in a cell that then fails", MIME: chart, Beside: "image/png", EName: "ZeroDivisionError", Code: pre + `
plt.plot([5, 6], [7, 8]); plt.title("Before")
plt.show()
1 / 0`, Want: []string{`{"type": "line", "title": "Before", "elements": [{"points": [[5, 7], [6, 8]]}]}`}},
		{Name: "a million points are cut", MIME: chart, Beside: "image/png", Code: pre + `
x = np.arange(1_000_000); plt.plot(x, x * 2.0); plt.show()`,
			Want: []string{`{"type": "line", "truncated": true}`},
			Check: func(t *testing.T, v any) {
				els := v.(map[string]any)["elements"].([]any)
				pts := els[0].(map[string]any)["points"].([]any)
				if len(pts) < 1000 || len(pts) > 10000 {
					t.Fatalf("%d points kept, want 1000..10000", len(pts))
				}
				first, last := pts[0].([]any), pts[len(pts)-1].([]any)
				if first[0] != 0.0 || last[0] != 999999.0 || last[1] != 1999998.0 {
					t.Errorf("first %v and last %v point not kept", first, last)
				}
			}},
		{Name: "a DataFrame of 5000 rows is cut with a note", MIME: frame, Beside: "text/html", Code: pre + `
pd.DataFrame({"n": np.arange(5000), "sq": np.arange(5000) ** 2})`,
			Want: []string{`{"columns": ["n", "sq"], "dtypes": {"n": "int64", "sq": "int64"}, "index": {"name": null},
 "total_rows": 5000, "total_columns": 2, "truncated": true, "note": "first 1000 of 5000 rows"}`},
			Check: func(t *testing.T, v any) {
				m := v.(map[string]any)
				data := m["data"].(map[string]any)
				sq, idx := data["sq"].([]any), m["index"].(map[string]any)["values"].([]any)
				if len(sq) != 1000 || len(idx) != 1000 || sq[999] != 998001.0 || idx[999] != 999.0 {
					t.Errorf("kept %d values (last %v), %d index values, want the first 1000", len(sq), sq[len(sq)-1], len(idx))
				}
			}},
		{Name: "a DataFrame's NaN, NaT, inf and timestamps are JSON", MIME: frame, Beside: "text/html", Code: pre + `
df = pd.DataFrame({"when": [pd.Timestamp("2024-05-06 07:08:09"), pd.NaT], "x": [np.nan, np.inf], "s": ["a", None],
                   "i": pd.array([1, None], dtype="Int64")}, index=pd.Index(["r1", "r2"], name="row"))
df`, Want: []string{`{"columns": ["when", "x", "s", "i"], "index": {"name": "row", "values": ["r1", "r2"]},
 "data": {"when": ["2024-05-06T07:08:09", null], "x": [null, null], "s": ["a", null], "i": [1, null]},
 "dtypes": {"when": "datetime64[ns]", "x": "float64", "s": "object", "i": "Int64"}, "total_rows": 2, "truncated": false}`}},
		{Name: "a failing extraction gives the PNG and no error", MIME: chart, Beside: "image/png", Code: pre + `
fig, ax = plt.subplots(); ax.plot([1, 2]); ax.get_xlabel = lambda: 1 / 0
plt.show()`, Want: []string{}},
	}
}

// RichOutput runs RichCells on one python3 kernel of rt: every structured
// value is there, beside its usual MIME type, and contains its Want.
func RichOutput(t *testing.T, rt Starter, id string) {
	k := Start(t, rt, sandbox.Spec{ID: id})
	// Pillow as E2B's kernels have it: show() displays the image, and so
	// does save() (at most 10 times a cell).
	t.Run("pillow show and save display the image", func(t *testing.T) {
		got, ename, evalue := RunRich(t, k, "from PIL import Image\nim = Image.new('RGB', (8, 8), 'red')\nim.show()\nim.save('red.png')\n"+
			"for i in range(30): im.save(f'red{i}.png')\nimport os; print(os.path.getsize('red.png') > 0)", "image/png", "image/png")
		if ename != "" || len(got) != 11 {
			t.Fatalf("%d PNG displays (%s %s), want 11: show, then the first 10 saves", len(got), ename, evalue)
		}
		// A library's saves are not the cell's: matplotlib writes its PNG
		// through Pillow, and a figure is still one display.
		got, ename, evalue = RunRich(t, k, "import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\nplt.show()\nplt.plot([1, 2], [4, 3])\nplt.savefig('fig.png')", "image/png", "image/png")
		if ename != "" || len(got) != 2 {
			t.Fatalf("%d PNG displays (%s %s) of one shown figure and one saved (then shown at the end), want 2", len(got), ename, evalue)
		}
	})
	for _, c := range RichCells() {
		t.Run(c.Name, func(t *testing.T) {
			got, ename, evalue := RunRich(t, k, c.Code, c.MIME, c.Beside)
			if ename != c.EName {
				t.Fatalf("error %q (%s), want %q", ename, evalue, c.EName)
			}
			if len(got) != len(c.Want) {
				t.Fatalf("%d %s values, want %d: %s", len(got), c.MIME, len(c.Want), got)
			}
			for i, raw := range got {
				var v, want any
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatalf("%s is not JSON: %v", c.MIME, err)
				}
				if err := json.Unmarshal([]byte(c.Want[i]), &want); err != nil {
					t.Fatalf("the table's want: %v", err)
				}
				if err := Contains(v, want, "$"); err != nil {
					t.Errorf("%v\ngot: %.3000s", err, raw)
				}
				if c.Check != nil {
					c.Check(t, v)
				}
			}
		})
	}
}

// RunRich executes code on k and returns the mime values of its displays
// and results, in order, failing t when a bundle that has mime lacks
// beside, or when a bundle has beside and not mime (unless the cell wants
// none). It returns the error's name and value too.
func RunRich(t testing.TB, k Kernel, code, mime, beside string) (got []json.RawMessage, ename, evalue string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	besides := 0
	_, err := k.Client.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) {
		switch ev.Kind {
		case kernel.EventResult, kernel.EventDisplay:
			v, ok := ev.Data[mime]
			if _, b := ev.Data[beside]; b {
				besides++
			} else if ok {
				t.Errorf("a bundle has %s without %s", mime, beside)
			}
			if ok {
				got = append(got, v)
			}
		case kernel.EventError:
			ename, evalue = ev.EName, ev.EValue
		}
	})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if besides == 0 {
		t.Errorf("no %s in the cell's output", beside)
	}
	return got, ename, evalue
}

// Contains reports how got differs from want: every key of a want object
// must be in got with a value that contains want's; arrays must have the
// same length and contain element by element; other values must be
// equal. path names where (for the message).
func Contains(got, want any, path string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %v, want an object", path, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: no key %q", path, k)
			}
			if err := Contains(gv, wv, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: got %v, want %v", path, got, want)
		}
		for i := range w {
			if err := Contains(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		if !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
	return nil
}
