package loadgen

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTarget opens fakeConns; every failEvery-th Open fails. onOpen, when
// set, runs under the lock at each successful Open.
type fakeTarget struct {
	mu        sync.Mutex
	opened    int
	open      int // open now
	maxOpen   int
	closed    int
	failEvery int
	onOpen    func(open int)
	codes     []string
}

func (f *fakeTarget) Name() string { return "fake" }

func (f *fakeTarget) Open(context.Context) (Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened++
	if f.failEvery > 0 && f.opened%f.failEvery == 0 {
		return nil, errors.New("no kernel for you")
	}
	f.open++
	f.maxOpen = max(f.maxOpen, f.open)
	if f.onOpen != nil {
		f.onOpen(f.open)
	}
	return &fakeConn{f: f}, nil
}

type fakeConn struct{ f *fakeTarget }

func (c *fakeConn) Execute(_ context.Context, code string) (time.Duration, error) {
	time.Sleep(time.Millisecond)
	c.f.mu.Lock()
	c.f.codes = append(c.f.codes, code)
	c.f.mu.Unlock()
	return 0, nil
}

func (c *fakeConn) Close(context.Context) error {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.open--
	c.f.closed++
	return nil
}

// TestCreation: the sessions stay open until the run ends, then all are
// closed; failures are counted, not fatal.
func TestCreation(t *testing.T) {
	f := &fakeTarget{failEvery: 5}
	r, err := Creation(context.Background(), f, CreationConfig{Clients: 3, Sessions: 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 4 || r.Sessions != 20 || r.PerSec <= 0 || r.P50 <= 0 || r.P90 < r.P50 {
		t.Errorf("result %+v", r)
	}
	if f.maxOpen != 16 || f.open != 0 || f.closed != 16 {
		t.Errorf("max open %d, open %d, closed %d: the sessions were not kept to the end, or not closed", f.maxOpen, f.open, f.closed)
	}
	if len(f.codes) != 16 || f.codes[0] != "1 + 1" {
		t.Errorf("codes %q", f.codes)
	}
	if _, err := Creation(context.Background(), &fakeTarget{failEvery: 1}, CreationConfig{Sessions: 3}); err == nil {
		t.Error("no kernel created, no error")
	}
}

// TestFirstCell: one session at a time, Ready before each.
func TestFirstCell(t *testing.T) {
	f := &fakeTarget{}
	var ready atomic.Int32
	l, err := FirstCell(context.Background(), f, FirstCellConfig{Samples: 5, Code: "cell", Ready: func(context.Context) error {
		if f.open != 0 {
			return fmt.Errorf("%d sessions still open", f.open)
		}
		ready.Add(1)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Samples != 5 || ready.Load() != 5 || f.maxOpen != 1 || f.closed != 5 || l.P50 <= 0 {
		t.Errorf("latency %+v, ready %d, max open %d, closed %d", l, ready.Load(), f.maxOpen, f.closed)
	}
	if _, err := FirstCell(context.Background(), f, FirstCellConfig{Code: "x", Ready: func(context.Context) error { return errors.New("never") }}); err == nil {
		t.Error("Ready's error lost")
	}
}

// TestIdleMemory: the growth of memory in use over the sessions, per
// session, read while they are all open.
func TestIdleMemory(t *testing.T) {
	root := t.TempDir()
	meminfo := func(usedMiB int) {
		write(t, filepath.Join(root, "meminfo"), fmt.Sprintf("MemTotal: %d kB\nMemAvailable: %d kB\n", 100000<<10, (100000-usedMiB)<<10))
	}
	meminfo(1000)
	f := &fakeTarget{onOpen: func(open int) { meminfo(1000 + 30*open) }}
	readies := 0
	per, err := IdleMemory(context.Background(), f, ProcMeter{Root: root}, IdleConfig{Sessions: 10, Code: "import numpy", Settle: time.Millisecond,
		Ready: func(context.Context) error { readies++; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if per != 30<<20 || f.open != 0 || len(f.codes) != 10 || readies != 2 {
		t.Errorf("per session %d, want %d; open %d; codes %d; ready awaited %d times", per, 30<<20, f.open, len(f.codes), readies)
	}
	if _, err := IdleMemory(context.Background(), &fakeTarget{failEvery: 2}, ProcMeter{Root: root}, IdleConfig{Sessions: 4, Settle: time.Millisecond}); err == nil {
		t.Error("failed opens, no error")
	}
}
