package sandbox

import (
	"strings"
	"testing"

	"github.com/glassroom/glassroom/kernel/kernels"
)

// TestCheckEnvRefusesWhatSteersAKernel: every name a kernel of the
// registry reserves (its ReservedEnv: JAVA_TOOL_OPTIONS, R_*, DENO_*,
// PYTHON*, BASH_ENV, ...) and the loader's and C library's are refused
// with the reason, whatever the case; other names pass.
func TestCheckEnvRefusesWhatSteersAKernel(t *testing.T) {
	names := []string{"LD_PRELOAD", "GLASSROOM_X", "HTTP_PROXY", "PATH"}
	for _, k := range kernels.All() {
		for _, r := range k.ReservedEnv {
			names = append(names, r.Prefix+"X", strings.ToLower(r.Prefix))
		}
	}
	for _, want := range []string{"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "R_PROFILE_USER", "DENO_DIR", "PYTHONPATH", "BASH_ENV"} {
		found := false
		for _, n := range names {
			found = found || strings.HasPrefix(strings.ToUpper(want), strings.TrimSuffix(strings.ToUpper(n), "X"))
		}
		if !found {
			t.Errorf("%s is reserved by no kernel", want)
		}
	}
	for _, n := range names {
		err := CheckEnv(map[string]string{n: "v"})
		if err == nil || !strings.Contains(err.Error(), n) || !strings.Contains(err.Error(), "may not be set") {
			t.Errorf("%s: %v", n, err)
		}
	}
	for _, n := range []string{"GR_X", "FOO", "JAVAX", "my_var"} {
		if err := CheckEnv(map[string]string{n: "v"}); err != nil {
			t.Errorf("%s refused: %v", n, err)
		}
	}
}
