package sessions_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
	"github.com/rs/zerolog"
)

// limitsRuntime records the spec's limits and starts sandboxes whose
// effective limits are the runtime's (sandbox.Common.Limits) of them.
type limitsRuntime struct {
	*sessionstest.Runtime
	common sandbox.Common
	mu     sync.Mutex
	spec   sandbox.Limits
}

type limitsSandbox struct {
	sandbox.Sandbox
	limits sandbox.Limits
}

func (s limitsSandbox) Limits() sandbox.Limits { return s.limits }

func (r *limitsRuntime) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.spec = spec.Limits
	r.mu.Unlock()
	sb, err := r.Runtime.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return limitsSandbox{sb, r.common.Limits(spec.Limits)}, nil
}

// distinct sets every field of the struct v points to to a distinct
// value, base+i (base must clear every minimum).
func distinct(v any, base float64) {
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(base) + int64(i))
		case reflect.Float64:
			f.SetFloat(base + float64(i) + 0.5)
		default:
			panic("limits: a field of kind " + f.Kind().String() + ": teach distinct about it")
		}
	}
}

// TestEveryLimitReachesTheSandboxAndInfo: each field of api.Limits, set
// to its own value, survives the gateway's conversion, the session's
// spec, the runtime's defaults and maxima, and comes back in Info (and
// its JSON, as api.Limits reads it). A new limit dropped anywhere on the
// way fails here.
func TestEveryLimitReachesTheSandboxAndInfo(t *testing.T) {
	var want api.Limits
	distinct(&want, 1000)
	var maxima, defaults sandbox.Limits
	distinct(&maxima, 1_000_000)
	distinct(&defaults, 500)
	rt := &limitsRuntime{Runtime: sessionstest.NewRuntime(t.TempDir()), common: sandbox.Common{Defaults: defaults, Max: maxima}}
	m, err := sessions.New(sessions.Config{Dial: rt.Dial}, rt, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	opts := sessions.CreateOptions{Limits: sessions.LimitsFromWire(want)}
	if err := opts.Limits.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := m.Create(context.Background(), "t", opts)
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	spec := rt.spec
	rt.mu.Unlock()
	if got := sessions.WireLimits(spec); got != want {
		t.Errorf("the spec's limits %+v, want %+v", got, want)
	}
	info := s.Info()
	if got := sessions.WireLimits(info.Limits); got != want {
		t.Errorf("Info's limits %+v, want %+v", got, want)
	}
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var read api.Session
	if err := json.Unmarshal(data, &read); err != nil {
		t.Fatal(err)
	}
	if read.Limits != want {
		t.Errorf("Info's JSON limits %+v, want %+v\n%s", read.Limits, want, data)
	}
	// And a zero field takes the runtime's default, for every field.
	rv := reflect.ValueOf(&want).Elem()
	for i := range rv.NumField() {
		partial := want
		reflect.ValueOf(&partial).Elem().Field(i).SetZero()
		got := reflect.ValueOf(rt.common.Limits(sessions.LimitsFromWire(partial))).Field(i).Interface()
		if def := reflect.ValueOf(defaults).Field(i).Interface(); got != def {
			t.Errorf("%s: zero became %v, not the default %v", rv.Type().Field(i).Name, got, def)
		}
	}
}
