package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/testkit"
)

// TestBenchGoals runs `glassroom bench --goals`, small, against a real
// gateway with a warm pool (local runtime, real kernels), through both of
// its faces: every goal's row has a figure for each target, measured (not
// zero), and nothing failed.
func TestBenchGoals(t *testing.T) {
	if testing.Short() {
		t.Skip("real kernels")
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := serveInProcess(ctx, t, "--state-dir", stateDir(t), "--uid-base", strconv.Itoa(testkit.UIDBase(t)), "--pool", "1")
	defer func() { cancel(); srv.wait(t) }()
	var out syncBuffer
	err := run(context.Background(), []string{"bench", "--goals", "--busy-sessions", "2", "--idle-sessions", "2", "--creation-clients", "2",
		"--creation-sessions", "3", "--samples", "2", "--duration", "2s", "--settle", "1s",
		"glassroom=" + srv.base, "glassroom-api=" + srv.base}, []string{"GLASSROOM_API_KEY=" + srv.key}, &out)
	text := out.String()
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, text)
	}
	table, _, _ := strings.Cut(text[strings.Index(text, "| goal |"):], "\n\n")
	t.Log("\n" + table)
	if strings.Contains(table, "\nglassroom") {
		t.Errorf("a measurement failed:\n%s", table)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[2:] {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("row %q: want goal, target and two targets' figures", line)
		}
		rows[cells[0]] = cells[2:]
	}
	num := regexp.MustCompile(`^[0-9.]+`)
	positive := func(row string, col int) float64 {
		t.Helper()
		for name, cells := range rows {
			if strings.HasPrefix(name, row) {
				v, _ := strconv.ParseFloat(num.FindString(cells[col]), 64)
				if v <= 0 {
					t.Errorf("%s, column %d: %q", name, col, cells[col])
				}
				return v
			}
		}
		t.Errorf("no row %q", row)
		return 0
	}
	// Column 0 is the native API (with the pool), column 1 the Jupyter face
	// (no pool: it creates kernels as a Jupyter server does).
	pool := positive("first analysis cell from the pool", 0)
	cold := positive("first analysis cell, cold", 0)
	if pool >= cold {
		t.Errorf("from the pool %v ms, cold %v ms: the pool was not used", pool, cold)
	}
	for col := range 2 {
		positive("first analysis cell, cold", col)
		positive("creation", col)
		// The machine's memory moves with whatever else runs (other
		// packages' tests): here only its figure is checked for.
		if cells := rows["memory per idle session with numpy, pandas, matplotlib (2 sessions)"]; len(cells) != 2 || !regexp.MustCompile(`^-?[0-9.]+ MiB$`).MatchString(cells[col]) {
			t.Errorf("memory per idle session: %q", cells)
		}
		positive("2 busy sessions, `x + 1`", col)
		positive("… kernel CPU per `x + 1`", col)
		positive("2 busy sessions, numpy", col)
	}
	if !bytes.Contains([]byte(table), []byte("glassroom local")) {
		t.Errorf("the native target is not named by its runtime:\n%s", table)
	}
}
