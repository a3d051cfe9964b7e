package gateway_test

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/gateway"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestMetricsScrape serves /metrics behind its token, runs sessions on a
// real kernel (an execution that succeeds, one that fails, a kernel that
// dies) and reads the scrape with Prometheus' own text parser.
func TestMetricsScrape(t *testing.T) {
	const token = "metrics-token-0123456789"
	g := apptest.Start(t, localRuntime(t), apptest.Options{Gateway: gateway.Config{APIKeys: []string{keyA}, MetricsToken: token}})
	hs := struct{ URL string }{g.URL}
	e := &env{t: t, url: g.URL, mgr: g.Manager}

	scrape := func(auth string) (int, map[string]*dto.MetricFamily) {
		t.Helper()
		req, _ := http.NewRequest("GET", hs.URL+"/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode, nil
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("the scrape does not parse: %v", err)
		}
		return resp.StatusCode, fams
	}
	for _, bad := range []string{"", keyA, "wrong-token-0123456789"} {
		if st, _ := scrape(bad); st != http.StatusUnauthorized {
			t.Errorf("/metrics with %q: %d, want 401", bad, st)
		}
	}

	s := e.create(keyA, nil)
	e.exec(keyA, s.ID, "x = 1", 30)
	e.exec(keyA, s.ID, "1 / 0", 30)
	if x := e.exec(keyA, s.ID, "import os; os._exit(3)", 30); x.Status != "died" {
		t.Fatalf("%+v", x)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, err := e.client(keyA).GetSession(context.Background(), s.ID)
		if info != nil && info.State == "idle" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kernel did not come back (idle) within 30s: last %+v %v", info, err)
		}
	}
	_, fams := scrape(token)
	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no %s in the scrape", name)
		}
	next:
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
		t.Fatalf("no %s %v", name, labels)
		return 0
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"glassroom_sessions", map[string]string{"state": "idle", "runtime": "local"}, 1},
		{"glassroom_sessions", map[string]string{"state": "busy"}, 0},
		{"glassroom_sessions_created_total", map[string]string{"pooled": "false"}, 1},
		{"glassroom_executions_total", map[string]string{"status": "ok"}, 1},
		{"glassroom_executions_total", map[string]string{"status": "error"}, 1},
		{"glassroom_executions_total", map[string]string{"status": "died"}, 1},
		{"glassroom_execution_duration_seconds", nil, 3},
		{"glassroom_kernel_deaths_total", map[string]string{"oom": "false"}, 1},
		{"glassroom_kernel_restarts_total", nil, 1},
		{"glassroom_queued_executions", nil, 0},
	}
	if os.Geteuid() == 0 { // the fork server: the first kernel and the one after the death
		checks = append(checks, struct {
			name   string
			labels map[string]string
			want   float64
		}{"glassroom_kernel_starts_total", map[string]string{"path": "forked"}, 2})
	}
	for _, c := range checks {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s %v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if value("glassroom_event_bytes_total", nil) == 0 {
		t.Error("no event bytes counted")
	}
	if fams["process_resident_memory_bytes"] == nil || fams["go_goroutines"] == nil {
		t.Error("the process and Go collectors are missing")
	}
}
