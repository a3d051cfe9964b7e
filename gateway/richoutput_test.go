package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
)

// richExecution is POST /v1/sessions/{id}/execute's reply as the wire has
// it: bundles as raw JSON.
type richExecution struct {
	Status  string `json:"status"`
	Outputs []struct {
		Type string                     `json:"type"`
		Data map[string]json.RawMessage `json:"data"`
	} `json:"outputs"`
	Result    map[string]json.RawMessage `json:"result"`
	Truncated bool                       `json:"truncated"`
}

// TestRichOutputThroughTheGateway: a matplotlib figure's chart JSON and a
// DataFrame's JSON reach a /v1 execute caller beside the PNG and the HTML,
// in the display and the result events (and the result bundle).
func TestRichOutputThroughTheGateway(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	var x richExecution
	code := `import matplotlib.pyplot as plt, pandas as pd
plt.bar(["north", "south"], [3, 5], label="units"); plt.title("Units"); plt.show()
pd.DataFrame({"region": ["north", "south"], "units": [3, 5]})`
	if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]any{"code": code}, &x); st != http.StatusOK || x.Status != "ok" {
		t.Fatalf("execute: %d %+v", st, x)
	}
	var chart struct {
		Type     string `json:"type"`
		Title    string `json:"title"`
		Elements []struct {
			Label, Group string
			Value        float64
		} `json:"elements"`
	}
	var frame struct {
		Columns []string         `json:"columns"`
		Data    map[string][]any `json:"data"`
	}
	var displays, results int
	for _, o := range x.Outputs {
		switch o.Type {
		case "display":
			displays++
			if o.Data["image/png"] == nil || json.Unmarshal(o.Data[sandbox.ChartMIME], &chart) != nil {
				t.Fatalf("display without a PNG and a chart: %v", keys(o.Data))
			}
		case "result":
			results++
			if o.Data["text/html"] == nil || json.Unmarshal(o.Data[sandbox.DataFrameMIME], &frame) != nil {
				t.Fatalf("result without HTML and a frame: %v", keys(o.Data))
			}
		}
	}
	if displays != 1 || results != 1 {
		t.Fatalf("%d displays, %d results, want 1 and 1", displays, results)
	}
	if chart.Type != "bar" || chart.Title != "Units" || len(chart.Elements) != 2 || chart.Elements[1].Label != "south" ||
		chart.Elements[1].Group != "units" || chart.Elements[1].Value != 5 {
		t.Errorf("chart %+v", chart)
	}
	if len(frame.Columns) != 2 || len(frame.Data["units"]) != 2 || frame.Data["units"][1] != 5.0 || frame.Data["region"][0] != "north" {
		t.Errorf("frame %+v", frame)
	}
	if x.Result[sandbox.DataFrameMIME] == nil {
		t.Errorf("the result bundle has no %s: %v", sandbox.DataFrameMIME, keys(x.Result))
	}
}

// TestRichCapKeepsThePNG: a figure whose PNG fits the execution's rich
// output cap (sessions.Config.MaxRichBytes) but whose chart JSON does not
// arrives with its PNG, without the JSON, and the execution says it was
// truncated.
func TestRichCapKeepsThePNG(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{MaxRichBytes: 200 << 10})
	s := e.create(keyA, nil)
	var x richExecution
	// 10,000 points of 15-digit noise: about 300 KB of chart JSON, on a
	// small PNG.
	code := `import matplotlib.pyplot as plt, numpy as np
plt.figure(figsize=(2, 2), dpi=40); plt.plot(np.random.default_rng(1).random(10000)); plt.show()`
	if st := e.call(keyA, "POST", "/v1/sessions/"+s.ID+"/execute", map[string]any{"code": code}, &x); st != http.StatusOK || x.Status != "ok" {
		t.Fatalf("execute: %d %+v", st, x)
	}
	pngs := 0
	for _, o := range x.Outputs {
		if o.Type == "display" && o.Data["image/png"] != nil {
			pngs++
			if len(o.Data["image/png"]) > 150<<10 {
				t.Fatalf("the PNG is %d bytes: the test needs a smaller one", len(o.Data["image/png"]))
			}
			if o.Data[sandbox.ChartMIME] != nil {
				t.Errorf("the chart JSON fit the cap: the test needs a larger one")
			}
		}
	}
	if pngs != 1 || !x.Truncated {
		t.Fatalf("%d PNGs (want 1), truncated %v (want true): %+v", pngs, x.Truncated, x)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
