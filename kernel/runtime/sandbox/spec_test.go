package sandbox

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEgressSocketSpec(t *testing.T) {
	base := Spec{ID: "0123456789abcdef"}
	if env := KernelEnv(base, DefaultLimits()); env[EgressSocketEnv] != "" {
		t.Errorf("no socket, yet %s=%q", EgressSocketEnv, env[EgressSocketEnv])
	}
	ok := base
	ok.EgressSocket = "/run/glassroom/egress/0123456789abcdef/proxy.sock"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if env := KernelEnv(ok, DefaultLimits()); env[EgressSocketEnv] != EgressDir+"/proxy.sock" {
		t.Errorf("%s=%q: the sandbox sees the socket in EgressDir", EgressSocketEnv, env[EgressSocketEnv])
	}
	for _, bad := range []string{"relative/proxy.sock", "/a/../b/proxy.sock", "/a/b/", "/a/b/.hidden", "/a/b/x y"} {
		s := base
		s.EgressSocket = bad
		if err := s.Validate(); !errors.Is(err, ErrBadSpec) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// A session cannot set the variable itself.
	s := base
	s.Env = map[string]string{EgressSocketEnv: "/tmp/evil.sock"}
	if err := s.Validate(); !errors.Is(err, ErrBadSpec) {
		t.Errorf("session env %s: %v", EgressSocketEnv, err)
	}
}

func TestLauncherStartsTheForwarderOnlyWhenAsked(t *testing.T) {
	code := launcherCode()
	if !strings.Contains(code, `os.environ.get("`+EgressSocketEnv+`")`) || !strings.Contains(code, "start_egress()") {
		t.Error("the launcher does not start the forwarder from " + EgressSocketEnv)
	}
	for _, line := range strings.Split(code, "\n")[1:] {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			t.Errorf("comment line left in the command line: %q", line)
		}
	}
}

// TestLimitsValidate is the table of the one check of limits: zero is the
// default, the minima are the smallest a kernel runs with, anything
// negative or not a finite number is refused with a reason naming the
// field, as a SpecError matched by ErrBadSpec; the operator's defaults and
// maxima go through the same check.
func TestLimitsValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		limits Limits
		reason string // "" for valid
	}{
		{"zero is the default", Limits{}, ""},
		{"the minima", Limits{MemoryMB: MinMemoryMB, CPUs: MinCPUs, Pids: MinPids, WorkspaceMB: 1}, ""},
		{"the built-in defaults", DefaultLimits(), ""},
		{"above the maxima (capped, not refused)", Limits{MemoryMB: 1 << 40, CPUs: 1e6, Pids: 1 << 30, WorkspaceMB: 1 << 40}, ""},
		{"memory under the minimum", Limits{MemoryMB: 127}, "limits too small: memory_mb >= 128, cpus >= 0.05, pids >= 16 (or 0 for the default); memory_mb is 127"},
		{"cpus under the minimum", Limits{CPUs: 1e-9}, "limits too small: memory_mb >= 128, cpus >= 0.05, pids >= 16 (or 0 for the default); cpus is 1e-09"},
		{"pids under the minimum", Limits{MemoryMB: 512, Pids: 15}, "limits too small: memory_mb >= 128, cpus >= 0.05, pids >= 16 (or 0 for the default); pids is 15"},
		{"negative memory", Limits{MemoryMB: -1}, "limits must not be negative (memory_mb is -1)"},
		{"negative workspace", Limits{WorkspaceMB: -5}, "limits must not be negative (workspace_mb is -5)"},
		{"negative before too small", Limits{MemoryMB: 1, Pids: -1}, "limits must not be negative (pids is -1)"},
		{"NaN cpus", Limits{CPUs: math.NaN()}, "limits must be finite numbers (cpus is NaN)"},
		{"infinite cpus", Limits{CPUs: math.Inf(1)}, "limits must be finite numbers (cpus is +Inf)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.limits.Validate()
			if c.reason == "" {
				if err != nil {
					t.Fatalf("%+v: %v", c.limits, err)
				}
				return
			}
			var se *SpecError
			if !errors.Is(err, ErrBadSpec) || !errors.As(err, &se) || se.Public() != c.reason {
				t.Fatalf("%+v: %v, want a SpecError %q", c.limits, err, c.reason)
			}
			// A session's spec and an operator's defaults are refused alike.
			if err := (Spec{ID: "0123456789abcdef", Limits: c.limits}).Validate(); !errors.Is(err, ErrBadSpec) {
				t.Errorf("Spec.Validate: %v", err)
			}
			common := Common{Defaults: c.limits}.WithDefaults("/state", 10000)
			if err := common.Validate(); err == nil || !strings.HasSuffix(err.Error(), c.reason) {
				t.Errorf("Common.Validate with these defaults: %v", err)
			}
		})
	}
}

// TestPython3IsGivenTheRichOutput: the python3 kernel (the default) gets
// richoutput.py, stripped of comment lines, and no other kernel does.
func TestPython3IsGivenTheRichOutput(t *testing.T) {
	for _, k := range []string{"", "python3"} {
		argv := KernelArgv("/usr/bin/python3", k, ConnFile)
		i := slices.Index(argv, "--rich")
		if i < 0 || i+1 >= len(argv) || !strings.Contains(argv[i+1], "def register(shell)") {
			t.Fatalf("kernel %q: no --rich CODE in %q", k, argv[:7])
		}
		for _, line := range strings.Split(argv[i+1], "\n")[1:] {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				t.Errorf("comment line left in the command line: %q", line)
			}
		}
	}
	for _, k := range []string{"bash", "r", "javascript"} {
		if slices.Contains(KernelArgv("/usr/bin/python3", k, ConnFile), "--rich") {
			t.Errorf("kernel %s is given the rich output", k)
		}
	}
}

// TestPipEnv: pip installs into the user site directory despite Debian's
// PEP 668 marker, its scripts are on PATH after the system's, and only a
// session without a network carries the no-network refusal (which the
// session may lift by setting the variable itself). pip shows the message
// as a Python repr: it must need no escaping.
func TestPipEnv(t *testing.T) {
	base := Spec{ID: "0123456789abcdef"}
	env := KernelEnv(base, DefaultLimits())
	if env["PIP_BREAK_SYSTEM_PACKAGES"] != "1" || env[NoNetworkPipEnv] != NoNetworkPip {
		t.Errorf("no network: %v", env)
	}
	if !strings.HasSuffix(env["PATH"], ":"+WorkDir+"/.local/bin") || !strings.HasPrefix(env["PATH"], ShimDir+":/usr/local/bin:") {
		t.Errorf("PATH %q", env["PATH"])
	}
	if strings.ContainsAny(NoNetworkPip, "'\\") {
		t.Errorf("the message has a quote pip would escape: %q", NoNetworkPip)
	}
	net := base
	net.EgressSocket = "/run/glassroom/egress/0123456789abcdef/proxy.sock"
	if env := KernelEnv(net, DefaultLimits()); env[NoNetworkPipEnv] != "" || env["PIP_BREAK_SYSTEM_PACKAGES"] != "1" {
		t.Errorf("with a network: %v", env)
	}
	own := base
	own.Env = map[string]string{NoNetworkPipEnv: "off"}
	if err := own.Validate(); err != nil {
		t.Fatal(err)
	}
	if env := KernelEnv(own, DefaultLimits()); env[NoNetworkPipEnv] != "off" {
		t.Errorf("the session's own %s: %q", NoNetworkPipEnv, env[NoNetworkPipEnv])
	}
}
