package sandbox

import (
	"errors"
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
