// Package metrics exposes the gateway's Prometheus metrics: it implements
// sessions.Observer (counters and histograms of what happens) and collects
// the sessions' state at each scrape (gauges), on a registry of its own,
// served as the text format by Handler.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is the gateway's metrics. Create it with New, give it to
// sessions.Config.Observer, then Watch the manager. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	created    *prometheus.CounterVec
	executions *prometheus.CounterVec
	duration   prometheus.Histogram
	deaths     *prometheus.CounterVec
	restarts   prometheus.Counter
	restored   *prometheus.CounterVec
	published  prometheus.Counter
	flushes    prometheus.Counter
}

// New returns metrics on a fresh registry (with Go and process collectors).
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.created = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glassroom_sessions_created_total",
		Help: "Sessions created, by whether the warm pool served them."}, []string{"pooled"})
	m.executions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glassroom_executions_total",
		Help: "Executions ended, by status."}, []string{"status"})
	m.duration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "glassroom_execution_duration_seconds",
		Help:    "Time from an execution reaching its kernel to its end.",
		Buckets: []float64{.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600}})
	m.deaths = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glassroom_kernel_deaths_total",
		Help: "Kernels that died on their own, by whether the OOM killer ended them."}, []string{"oom"})
	m.restarts = prometheus.NewCounter(prometheus.CounterOpts{Name: "glassroom_kernel_restarts_total",
		Help: "Kernel restarts (requested, after a death, after a stubborn timeout)."})
	m.restored = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "glassroom_restored_sessions_total",
		Help: "Stored sessions at start: adopted (variables kept), restarted (files kept) or lost."}, []string{"outcome"})
	m.published = prometheus.NewCounter(prometheus.CounterOpts{Name: "glassroom_event_bytes_total",
		Help: "Bytes of session events relayed to clients (approximate)."})
	m.flushes = prometheus.NewCounter(prometheus.CounterOpts{Name: "glassroom_store_flushes_total",
		Help: "Writes of every session's changing state to the session store (--durable)."})
	m.reg.MustRegister(m.created, m.executions, m.duration, m.deaths, m.restarts, m.restored, m.published, m.flushes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Watch adds gauges read from mgr at each scrape: sessions by state and
// runtime, queued executions, the warm pool, the output budget, kernel
// starts in progress.
func (m *Metrics) Watch(mgr *sessions.Manager) { m.reg.MustRegister(&stateCollector{mgr: mgr}) }

// WatchStarts adds the runtime's kernel starts, read at each scrape: how
// many were forked from its template and how many exec'd, and why.
func (m *Metrics) WatchStarts(c sandbox.StartCounter) { m.reg.MustRegister(startCollector{c}) }

// startCollector reads a runtime's kernel starts at each scrape.
type startCollector struct{ c sandbox.StartCounter }

var descKernelStarts = prometheus.NewDesc("glassroom_kernel_starts_total",
	"Kernels started, by path (forked from the template, or exec'd) and, for an exec'd python3 kernel, why it was not forked (kernel, env, limits, template).",
	[]string{"path", "reason"}, nil)

func (s startCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descKernelStarts }

func (s startCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range s.c.KernelStarts() {
		ch <- prometheus.MustNewConstMetric(descKernelStarts, prometheus.CounterValue, float64(n.N), n.Path, n.Reason)
	}
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// SessionCreated implements sessions.Observer.
func (m *Metrics) SessionCreated(pooled bool) {
	m.created.WithLabelValues(strconv.FormatBool(pooled)).Inc()
}

// ExecutionDone implements sessions.Observer.
func (m *Metrics) ExecutionDone(status sessions.Status, d time.Duration) {
	m.executions.WithLabelValues(string(status)).Inc()
	m.duration.Observe(d.Seconds())
}

// KernelDied implements sessions.Observer.
func (m *Metrics) KernelDied(oom bool) { m.deaths.WithLabelValues(strconv.FormatBool(oom)).Inc() }

// KernelRestarted implements sessions.Observer.
func (m *Metrics) KernelRestarted() { m.restarts.Inc() }

// Restored implements sessions.Observer.
func (m *Metrics) Restored(outcome string) { m.restored.WithLabelValues(outcome).Inc() }

// Published implements sessions.Observer.
func (m *Metrics) Published(n int) { m.published.Add(float64(n)) }

// StoreFlushed implements sessions.Observer.
func (m *Metrics) StoreFlushed() { m.flushes.Inc() }

var _ sessions.Observer = (*Metrics)(nil)

// stateCollector reads the manager's state at each scrape.
type stateCollector struct{ mgr *sessions.Manager }

var (
	descSessions = prometheus.NewDesc("glassroom_sessions", "Live sessions, by kernel state and runtime.", []string{"state", "runtime"}, nil)
	descQueued   = prometheus.NewDesc("glassroom_queued_executions", "Executions waiting in sessions' queues.", nil, nil)
	descPool     = prometheus.NewDesc("glassroom_pool_kernels", "Warm-pool kernels, by status (ready, starting, target).", []string{"status"}, nil)
	descBudget   = prometheus.NewDesc("glassroom_output_budget_bytes", "The gateway's output budget, by kind (used, max).", []string{"kind"}, nil)
	descStarts   = prometheus.NewDesc("glassroom_kernel_starts_in_progress", "Kernels starting now.", nil, nil)
	descWaiting  = prometheus.NewDesc("glassroom_exec_slot_waiting", "Executions waiting for a slot of the fair scheduler (--exec-slots).", nil, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSessions, descQueued, descPool, descBudget, descStarts, descWaiting} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.mgr.Stats()
	for _, state := range []sessions.State{sessions.StateIdle, sessions.StateBusy, sessions.StateRestarting, sessions.StateDead} {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(st.ByState[state]), string(state), st.Runtime)
	}
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(st.Queued))
	ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(st.Pool.Ready), "ready")
	ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(st.Pool.Starting), "starting")
	ch <- prometheus.MustNewConstMetric(descPool, prometheus.GaugeValue, float64(st.Pool.Target), "target")
	ch <- prometheus.MustNewConstMetric(descBudget, prometheus.GaugeValue, float64(st.BudgetUsed), "used")
	ch <- prometheus.MustNewConstMetric(descBudget, prometheus.GaugeValue, float64(st.BudgetMax), "max")
	ch <- prometheus.MustNewConstMetric(descStarts, prometheus.GaugeValue, float64(st.StartsActive))
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(st.SlotWaiting))
}
