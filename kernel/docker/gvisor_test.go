package docker

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/sandbox"
	"github.com/rs/zerolog"
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
