package loadgen

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProcMeterParses reads a made-up /proc: the machine's busy time
// leaves idle, iowait and guest time out; a process's own time is its
// utime + stime whatever its name holds; memory in use is total -
// available; the listener is found through its socket's inode.
func TestProcMeterParses(t *testing.T) {
	root := t.TempDir()
	// user nice system idle iowait irq softirq steal guest guest_nice
	write(t, filepath.Join(root, "stat"), "cpu  100 10 50 9000 40 5 5 0 30 0\ncpu0 1 2 3\n")
	self := "1 (bench) R 1 1 1 0 -1 0 0 0 0 0 7 3 100 100 20 0 1 0 1 1 1\n"
	write(t, filepath.Join(root, "self", "stat"), self)
	write(t, filepath.Join(root, "4242", "stat"), "4242 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 20 5 999 999 20 0 1 0 1 1 1\n")
	write(t, filepath.Join(root, "meminfo"), "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n")
	write(t, filepath.Join(root, "net", "tcp"), "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		"   0: 0100007F:4A66 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0 100 0 0 10 0\n"+
		"   1: 0100007F:4A67 0100007F:9999 01 00000000:00000000 00:00000000 00000000     0        0 778 1 0 100 0 0 10 0\n")
	if err := os.MkdirAll(filepath.Join(root, "4242", "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[777]", filepath.Join(root, "4242", "fd", "3")); err != nil {
		t.Fatal(err)
	}
	m := ProcMeter{Root: root}
	pid, err := m.ListenerPID(0x4A66)
	if err != nil || pid != 4242 {
		t.Fatalf("listener: %d %v", pid, err)
	}
	if _, err := m.ListenerPID(0x4A67); err == nil {
		t.Error("a connected socket taken for a listener")
	}
	m.ServerPID = pid
	c, err := m.Read()
	if err != nil {
		t.Fatal(err)
	}
	want := CPU{Machine: 170 * 10 * time.Millisecond, Server: 25 * 10 * time.Millisecond, Client: 10 * 10 * time.Millisecond}
	if c != want {
		t.Errorf("cpu %+v, want %+v", c, want)
	}
	if k := c.Sub(CPU{Machine: 70 * 10 * time.Millisecond}).Kernels(); k != 650*time.Millisecond {
		t.Errorf("kernels' share %v", k)
	}
	if mem, err := m.MemoryInUse(); err != nil || mem != 600<<10 {
		t.Errorf("memory in use %d %v", mem, err)
	}
	write(t, filepath.Join(root, "meminfo"), "MemTotal: 1000 kB\n")
	if _, err := m.MemoryInUse(); err == nil {
		t.Error("no MemAvailable, no error")
	}
}

// TestProcMeterOnThisMachine: the real /proc finds this test's own
// listener and sees the CPU it burns.
func TestProcMeterOnThisMachine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var m ProcMeter
	pid, err := m.ListenerPID(ln.Addr().(*net.TCPAddr).Port)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("listener %d (this process %d): %v", pid, os.Getpid(), err)
	}
	before, err := m.Read()
	if err != nil {
		t.Fatal(err)
	}
	// Spin until this process's CPU time has grown by 200 ms; the
	// machine's busy time must have grown about as much.
	var d CPU
	for deadline := time.Now().Add(60 * time.Second); d.Client < 200*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("a minute of spinning read as %+v", d)
		}
		for end := time.Now().Add(10 * time.Millisecond); time.Now().Before(end); {
		}
		after, err := m.Read()
		if err != nil {
			t.Fatal(err)
		}
		d = after.Sub(before)
	}
	// The machine's counters are sampled at each tick, the process's are
	// exact: they may differ by a few ticks.
	if d.Machine < d.Client-50*time.Millisecond || d.Server != 0 {
		t.Errorf("spinning read as %+v", d)
	}
	m.ServerPID = pid // a server in this process: its time and the client's are one
	if c, err := m.Read(); err != nil || c.Client != 0 || c.Server < before.Client+d.Client {
		t.Errorf("server in this process: %+v %v", c, err)
	}
	if mem, err := m.MemoryInUse(); err != nil || mem <= 0 {
		t.Errorf("memory in use %d %v", mem, err)
	}
	if _, err := m.ListenerPID(1); err == nil {
		t.Error("port 1 has no listener here")
	}
}
