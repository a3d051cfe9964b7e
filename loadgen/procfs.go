package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The goals harness runs on the machine it measures (every target listens
// on loopback), so it reads CPU and memory from Linux's /proc: the machine's
// busy time, the server's own, its own, and the memory in use.

// userHZ is the unit of /proc/stat and /proc/PID/stat times (USER_HZ is
// 100 on every Linux architecture Go supports).
const userHZ = 100

// CPU is cumulative CPU time: the whole machine's busy time, the server
// process's and this process's.
type CPU struct {
	Machine, Server, Client time.Duration
}

// Sub returns the CPU spent between an earlier reading and c.
func (c CPU) Sub(earlier CPU) CPU {
	return CPU{Machine: c.Machine - earlier.Machine, Server: c.Server - earlier.Server, Client: c.Client - earlier.Client}
}

// Kernels is what neither the server nor the client spent: the kernels
// (and their sandboxes, and anything else running on the machine).
func (c CPU) Kernels() time.Duration { return max(c.Machine-c.Server-c.Client, 0) }

// ProcMeter reads CPU times from /proc. Safe for concurrent use.
type ProcMeter struct {
	// ServerPID is the server's process; 0: none (its share counts as the
	// kernels'). When it is this process (a server under test in the
	// harness's own process), the client's time counts as the server's.
	ServerPID int
	Root      string // default /proc
}

func (m ProcMeter) root() string {
	if m.Root == "" {
		return "/proc"
	}
	return m.Root
}

// Read returns the cumulative CPU times now.
func (m ProcMeter) Read() (CPU, error) {
	var c CPU
	data, err := os.ReadFile(filepath.Join(m.root(), "stat"))
	if err != nil {
		return c, fmt.Errorf("loadgen: cpu: %w", err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return c, fmt.Errorf("loadgen: cpu: unexpected %s/stat", m.root())
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("loadgen: cpu: %w", err)
		}
		// idle and iowait are not busy; guest time is already in user.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += n
	}
	c.Machine = ticks(busy)
	if c.Client, err = m.process("self"); err != nil {
		return c, err
	}
	switch {
	case m.ServerPID == os.Getpid():
		c.Server, c.Client = c.Client, 0
	case m.ServerPID > 0:
		if c.Server, err = m.process(strconv.Itoa(m.ServerPID)); err != nil {
			return c, err
		}
	}
	return c, nil
}

// process returns a process's own user + system time (not its children's).
func (m ProcMeter) process(pid string) (time.Duration, error) {
	data, err := os.ReadFile(filepath.Join(m.root(), pid, "stat"))
	if err != nil {
		return 0, fmt.Errorf("loadgen: cpu of %s: %w", pid, err)
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("loadgen: cpu of %s: unexpected stat", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	// After the name: state(3) ... utime(14) stime(15), counted from 1.
	if len(f) < 13 {
		return 0, fmt.Errorf("loadgen: cpu of %s: unexpected stat", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("loadgen: cpu of %s: %w", pid, err)
	}
	return ticks(u + s), nil
}

func ticks(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }

// MemoryInUse returns MemTotal - MemAvailable: what the machine cannot
// give to a new process, each shared page counted once.
func (m ProcMeter) MemoryInUse() (int64, error) {
	f, err := os.Open(filepath.Join(m.root(), "meminfo"))
	if err != nil {
		return 0, fmt.Errorf("loadgen: memory: %w", err)
	}
	defer f.Close()
	var total, avail int64 = -1, -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "MemTotal":
			total = n << 10
		case "MemAvailable":
			avail = n << 10
		}
	}
	if total < 0 || avail < 0 {
		return 0, errors.New("loadgen: memory: no MemTotal or MemAvailable in meminfo")
	}
	return total - avail, nil
}

// ListenerPID returns the process that listens on TCP port (the server
// under test on this machine), found through /proc/net and the processes'
// open sockets.
func (m ProcMeter) ListenerPID(port int) (int, error) {
	inodes := map[string]bool{}
	for _, name := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(m.root(), "net", name))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && int(p) == port {
				inodes["socket:["+f[9]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("loadgen: nothing listens on port %d", port)
	}
	dirs, _ := filepath.Glob(filepath.Join(m.root(), "[0-9]*", "fd"))
	for _, d := range dirs {
		fds, _ := os.ReadDir(d)
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(d, fd.Name())); err == nil && inodes[link] {
				return strconv.Atoi(filepath.Base(filepath.Dir(d)))
			}
		}
	}
	return 0, fmt.Errorf("loadgen: no process found for port %d", port)
}
