package local

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pidFileName is the file in a session directory (not bound into the
// sandbox) that names the sandbox's current kernel process: bwrap's pid
// and its start time, which tells it from a later process that reuses the
// pid.
const pidFileName = "kernel.pid"

// writePidFile records the kernel process pid in the session directory dir.
func writePidFile(dir string, pid int) error {
	start, err := procStart(pid)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, pidFileName+".new")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)+" "+start+"\n"), 0o600); err != nil {
		return fmt.Errorf("local: pid file: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, pidFileName)); err != nil {
		return fmt.Errorf("local: pid file: %w", err)
	}
	return nil
}

// kernelAlive reports whether the process the session directory's pid
// file names is still running (the same process: same pid, same start
// time). A directory without a readable pid file has no live kernel.
func kernelAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, pidFileName))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return false
	}
	start, err := procStart(pid)
	return err == nil && start == f[1]
}

// procStart returns a process's start time (field 22 of /proc/<pid>/stat,
// in clock ticks since boot).
func procStart(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", fmt.Errorf("local: process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold anything:
	// count fields after its closing one, which is state (field 3).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("local: process %d: unreadable stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", fmt.Errorf("local: process %d: unreadable stat", pid)
	}
	return f[19], nil
}
