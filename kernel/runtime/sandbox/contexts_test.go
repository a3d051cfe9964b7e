package sandbox

import (
	"strconv"
	"strings"
	"testing"
)

// TestEgressProxyPortIsTheLaunchers: SharedEgressEnv points a kernel at
// the port the launcher's forwarder listens on.
func TestEgressProxyPortIsTheLaunchers(t *testing.T) {
	if !strings.Contains(launcher, "\nPROXY_PORT = "+strconv.Itoa(EgressProxyPort)+"\n") {
		t.Fatalf("launcher.py's PROXY_PORT is not EgressProxyPort (%d)", EgressProxyPort)
	}
}
