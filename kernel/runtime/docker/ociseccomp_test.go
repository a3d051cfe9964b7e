package docker

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestOCISeccompProfile: the profile for a pod is the Docker profile as a
// container without capabilities gets it: the calls Docker allows only
// with CAP_SYS_ADMIN (and the other capabilities) are gone, the ones for
// everyone stay, and nothing of Docker's conditional form is left for
// containerd to ignore.
func TestOCISeccompProfile(t *testing.T) {
	b, err := OCISeccompProfile("amd64")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "includes") || strings.Contains(s, "excludes") || strings.Contains(s, "archMap") {
		t.Fatal("Docker's conditional form left in the OCI profile")
	}
	var p struct {
		DefaultAction string   `json:"defaultAction"`
		Architectures []string `json:"architectures"`
		Syscalls      []struct {
			Names  []string        `json:"names"`
			Action string          `json:"action"`
			Args   json.RawMessage `json:"args"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || !slices.Contains(p.Architectures, "SCMP_ARCH_X86_64") || slices.Contains(p.Architectures, "SCMP_ARCH_AARCH64") {
		t.Fatalf("default %s, architectures %v", p.DefaultAction, p.Architectures)
	}
	allowed, filtered := map[string]bool{}, map[string]bool{}
	for _, r := range p.Syscalls {
		if r.Action == "SCMP_ACT_ALLOW" {
			for _, n := range r.Names {
				if len(r.Args) == 0 {
					allowed[n] = true
				} else {
					filtered[n] = true
				}
			}
		}
	}
	for _, n := range []string{"read", "write", "execve", "arch_prctl", "mmap", "futex"} {
		if !allowed[n] {
			t.Errorf("%s not allowed", n)
		}
	}
	for _, n := range []string{"clone", "socket"} { // allowed for some arguments (no new namespaces; some families)
		if allowed[n] || !filtered[n] {
			t.Errorf("%s: allowed outright %v, for some arguments %v", n, allowed[n], filtered[n])
		}
	}
	for _, n := range []string{"unshare", "setns", "mount", "bpf", "ptrace", "io_uring_setup", "perf_event_open", "init_module", "reboot", "clock_settime", "open_by_handle_at"} {
		if allowed[n] {
			t.Errorf("%s allowed to a container without capabilities", n)
		}
	}
	if a, err := OCISeccompProfile("arm64"); err != nil || !strings.Contains(string(a), "SCMP_ARCH_AARCH64") {
		t.Fatalf("arm64: %v", err)
	}
	if _, err := OCISeccompProfile("mips"); err == nil {
		t.Fatal("an architecture the profile lacks was accepted")
	}
}
