package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// A timed-out execution is interrupted. A kernel that has not obeyed by
// the end of the grace is restarted only when it is stuck: it made no
// progress over the grace. A kernel that is merely slow because the
// machine is busy (it used CPU time, its code sent output, or its threads
// are waiting for a CPU) is
// interrupted again and given another grace, up to InterruptMaxWait after
// the first interrupt; restarting it would cost the user every variable
// for nothing.

// publishedCounter is a kernel connection that counts the kernel's output
// messages (kernel.Client.Published).
type publishedCounter interface{ Published() int64 }

// progressProbe reads a kernel's progress between two calls of advanced:
// the CPU time of its sandbox (sandbox.UsageReader) and the output
// messages its connection received. Used by the worker's goroutine only.
type progressProbe struct {
	conn     publishedCounter    // nil when the connection does not count
	usage    sandbox.UsageReader // nil when the runtime does not report use
	msgs     int64
	cpu      uint64
	runnable int // threads running or waiting for a CPU at the last reading
	at       time.Time
}

// minProgressCPU is the CPU time a kernel must use over a grace of d to
// count as working. An idle kernel's sandbox uses some too (its threads
// answer the heartbeat, the launcher relays the pings): about a
// millisecond a second here. A kernel starved by a busy machine gets its
// share of the cores, tens of milliseconds a second even with a hundred
// runnable processes on two cores.
func minProgressCPU(d time.Duration) time.Duration {
	return max(10*time.Millisecond, d/200)
}

// newProgressProbe takes the first reading of c's and sb's progress.
func newProgressProbe(ctx context.Context, c KernelConn, sb sandbox.Sandbox) *progressProbe {
	p := &progressProbe{}
	p.conn, _ = c.(publishedCounter)
	if ur, ok := sb.(sandbox.UsageReader); ok {
		p.usage = ur
	}
	p.read(ctx)
	return p
}

// read takes a reading; a runtime that fails to report use is no longer
// asked.
func (p *progressProbe) read(ctx context.Context) (msgs int64, cpu uint64) {
	if p.conn != nil {
		msgs = p.conn.Published()
	}
	if p.usage != nil {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		u, err := p.usage.Usage(rctx)
		cancel()
		if err != nil {
			p.usage = nil
		} else {
			cpu = u.CPUNanos
			p.runnable = u.Runnable
		}
	}
	p.msgs, p.cpu, p.at = msgs, cpu, time.Now()
	return msgs, cpu
}

// advanced takes a new reading and says whether the kernel made progress
// since the last one, and what showed it ("" when it did not). A kernel
// whose progress cannot be read at all (no CPU time, no counting
// connection) is taken as working while it answers: the cap decides.
func (p *progressProbe) advanced(ctx context.Context) (bool, string) {
	msgs0, cpu0, at0 := p.msgs, p.cpu, p.at
	hadUsage := p.usage != nil
	msgs, cpu := p.read(ctx)
	window := p.at.Sub(at0)
	switch {
	case p.conn != nil && msgs > msgs0:
		return true, fmt.Sprintf("it sent %d messages", msgs-msgs0)
	case hadUsage && p.usage != nil && cpu >= cpu0 && time.Duration(cpu-cpu0) >= minProgressCPU(window):
		return true, fmt.Sprintf("it used %v of CPU time in %v", time.Duration(cpu-cpu0).Round(time.Millisecond), window.Round(100*time.Millisecond))
	case p.usage != nil && p.runnable > 0:
		// Starved: it computes, waiting its turn for a core (a hundred
		// runnable processes on two cores give it a few ms a second).
		return true, fmt.Sprintf("%d of its threads are waiting for a CPU", p.runnable)
	case !hadUsage && p.conn == nil:
		return true, "its progress cannot be read"
	}
	return false, ""
}
