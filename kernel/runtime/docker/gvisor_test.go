package docker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// infoEngine is an engine that describes itself with info and has every
// image; any other call panics (the embedded interface is nil).
type infoEngine struct {
	engine
	info system.Info
}

func (e infoEngine) Info(context.Context) (system.Info, error) { return e.info, nil }

func (e infoEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return image.InspectResponse{}, nil
}

func engineWith(runtimes map[string]system.Runtime) infoEngine {
	info := system.Info{Runtimes: map[string]system.RuntimeWithStatus{"runc": {Runtime: system.Runtime{Path: "runc"}}}}
	for name, rt := range runtimes {
		info.Runtimes[name] = system.RuntimeWithStatus{Runtime: rt}
	}
	return infoEngine{info: info}
}

// TestGVisorWithoutOCISeccompIsRefused: a runsc registered without
// --oci-seccomp would ignore the seccomp profile: the runtime refuses to
// start, with ErrSeccompNotEnforced and the fix; with the flag it starts.
func TestGVisorWithoutOCISeccompIsRefused(t *testing.T) {
	deb := []string{"--network=none", "--host-uds=all"}
	for _, tc := range []struct {
		name     string
		oci      string
		runtimes map[string]system.Runtime
		refused  bool
	}{
		{"runc needs nothing", "runc", nil, false},
		{"runsc without the flag", "runsc", map[string]system.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: deb}}, true},
		{"runsc with no args", "runsc", map[string]system.Runtime{"runsc": {Path: "/usr/bin/runsc"}}, true},
		{"runsc with the flag off", "runsc", map[string]system.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: append(deb, "--oci-seccomp=false")}}, true},
		{"runsc turned off after on", "runsc", map[string]system.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"--oci-seccomp", "--oci-seccomp=0"}}}, true},
		{"runsc under another name", "gvisor", map[string]system.Runtime{"gvisor": {Path: "/opt/bin/runsc", Args: deb}}, true},
		{"runsc as a containerd shim", "runsc", map[string]system.Runtime{"runsc": {Type: "io.containerd.runsc.v1"}}, true},
		{"runsc with the flag", "runsc", map[string]system.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: append(deb, "--oci-seccomp")}}, false},
		{"runsc with -oci-seccomp=true", "runsc", map[string]system.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: append(deb, "-oci-seccomp=true")}}, false},
		{"another name with the flag", "gvisor", map[string]system.Runtime{"gvisor": {Path: "/opt/bin/runsc", Args: []string{"--oci-seccomp"}}}, false},
		{"kata needs nothing", "kata", map[string]system.Runtime{"kata": {Path: "/usr/bin/kata-runtime"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{OCIRuntime: tc.oci, Common: sandbox.Common{StateDir: t.TempDir()}, Adopting: true}.withDefaults()
			os.Chmod(cfg.StateDir, 0o711)
			r, err := newRuntime(context.Background(), cfg, engineWith(tc.runtimes), zerolog.Nop())
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				r.Close()
				return
			}
			if err == nil {
				r.Close()
				t.Fatal("a gVisor runtime that ignores the seccomp profile was accepted")
			}
			if !errors.Is(err, ErrSeccompNotEnforced) || !errors.Is(err, sandbox.ErrUnavailable) {
				t.Fatalf("want ErrSeccompNotEnforced and ErrUnavailable, got %v", err)
			}
			for _, want := range []string{"--oci-seccomp", `"` + tc.oci + `"`, "daemon.json", "reload"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not name the fix (%q): %v", want, err)
				}
			}
		})
	}
}

// TestUnknownOCIRuntimeIsRefused: a runtime the engine does not have is
// refused at start, naming the ones it has.
func TestUnknownOCIRuntimeIsRefused(t *testing.T) {
	cfg := Config{OCIRuntime: "runsc", Common: sandbox.Common{StateDir: t.TempDir()}, Adopting: true}.withDefaults()
	_, err := newRuntime(context.Background(), cfg, engineWith(nil), zerolog.Nop())
	if !errors.Is(err, sandbox.ErrUnavailable) || errors.Is(err, ErrSeccompNotEnforced) || !strings.Contains(err.Error(), `no OCI runtime "runsc" (it has runc)`) {
		t.Fatalf("want ErrUnavailable naming the missing runtime, got %v", err)
	}
}

// TestGVisorProfile: for gVisor, which answers every refusal with EPERM,
// the profile's clone3 refusal (ENOSYS, so that glibc falls back to
// clone) becomes SCMP_ACT_TRACE, which answers ENOSYS without a tracer;
// nothing else changes, and an errno gVisor cannot give is refused.
func TestGVisorProfile(t *testing.T) {
	out, err := gvisorProfile(defaultSeccomp)
	if err != nil {
		t.Fatal(err)
	}
	type rule struct {
		Names    []string `json:"names"`
		Action   string   `json:"action"`
		ErrnoRet *int     `json:"errnoRet"`
		Args     []any    `json:"args"`
	}
	var before, after struct {
		DefaultAction string `json:"defaultAction"`
		Syscalls      []rule `json:"syscalls"`
	}
	json.Unmarshal([]byte(defaultSeccomp), &before)
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Syscalls) != len(before.Syscalls) || after.DefaultAction != before.DefaultAction {
		t.Fatalf("rules %d → %d, default %s → %s", len(before.Syscalls), len(after.Syscalls), before.DefaultAction, after.DefaultAction)
	}
	changed := 0
	for i, b := range before.Syscalls {
		a := after.Syscalls[i]
		if b.ErrnoRet != nil && *b.ErrnoRet == int(unix.ENOSYS) {
			changed++
			if a.Action != "SCMP_ACT_TRACE" || a.ErrnoRet != nil || !slices.Equal(a.Names, b.Names) {
				t.Errorf("ENOSYS rule %v became %+v", b.Names, a)
			}
			continue
		}
		if a.Action != b.Action || !slices.Equal(a.Names, b.Names) || len(a.Args) != len(b.Args) {
			t.Errorf("rule %v changed: %+v → %+v", b.Names, b, a)
		}
	}
	if changed != 1 || !strings.Contains(out, `"clone3"`) || !strings.Contains(out, "AF_NETLINK") {
		t.Fatalf("%d ENOSYS rules rewritten (want clone3's)", changed)
	}
	for _, bad := range []string{
		`{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["open_by_handle_at"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]}`,
		`{"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "syscalls": []}`,
	} {
		if _, err := gvisorProfile(bad); !errors.Is(err, errGVisorErrnoRet) {
			t.Errorf("%s: want errGVisorErrnoRet, got %v", bad, err)
		}
	}
	// Docker's built-in profile cannot be rewritten: refused under gVisor.
	cfg := Config{OCIRuntime: "runsc", SeccompProfile: SeccompDockerDefault, Common: sandbox.Common{StateDir: t.TempDir()}, Adopting: true}.withDefaults()
	eng := engineWith(map[string]system.Runtime{"runsc": {Path: "/usr/bin/runsc", Args: []string{"--oci-seccomp"}}})
	if _, err := newRuntime(context.Background(), cfg, eng, zerolog.Nop()); !errors.Is(err, errGVisorErrnoRet) {
		t.Fatalf("docker-default under gVisor: want errGVisorErrnoRet, got %v", err)
	}
}

// TestGVisorLimits: a gVisor session's pids are capped so that a fork
// bomb meets them before the memory limit, and the host's pids limit
// leaves room for the sentry's threads.
func TestGVisorLimits(t *testing.T) {
	for _, tc := range []struct{ mem, pids, want int }{
		{2048, 128, 48}, {2048, 32, 32}, {1024, 128, 25}, {512, 64, 16}, {256, 16, 16}, {8192, 1024, 48},
	} {
		got := gvisorLimits(sandbox.Limits{MemoryMB: tc.mem, Pids: tc.pids, CPUs: 1, WorkspaceMB: 64})
		if got.Pids != tc.want || got.MemoryMB != tc.mem || got.CPUs != 1 || got.WorkspaceMB != 64 {
			t.Errorf("%d MB, %d pids: got %+v, want %d pids", tc.mem, tc.pids, got, tc.want)
		}
	}
	if got := gvisorHostPids(48); got != 48*48+512 {
		t.Errorf("host pids for 48: %d", got)
	}
}

// TestGVisorProfileKeepsLargeNumbers: an operator's profile with a 64-bit
// argument mask comes out of the rewrite with the mask exactly as it was
// (a float64 round trip would change it).
func TestGVisorProfileKeepsLargeNumbers(t *testing.T) {
	const mask = "18446744073709551615" // 2^64 - 1
	in := `{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":1,"syscalls":[` +
		`{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":` + mask + `,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"}]},` +
		`{"names":["clone3"],"action":"SCMP_ACT_ERRNO","errnoRet":38}]}`
	out, err := gvisorProfile(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"value":`+mask) || !strings.Contains(out, `"SCMP_ACT_TRACE"`) {
		t.Fatalf("rewritten profile: %s", out)
	}
	if _, err := gvisorProfile(strings.Replace(in, `"errnoRet":38`, `"errnoRet":13`, 1)); !errors.Is(err, errGVisorErrnoRet) {
		t.Fatalf("an EACCES rule: %v", err)
	}
}
