package python_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestCustomizeKeepsMmdebstrapsAptConfig: customize.sh runs as an
// mmdebstrap hook, whose apt configuration (the file MMDEBSTRAP_APT_CONFIG
// names, in the new root's /tmp) mmdebstrap uses after the hook to clean
// the new root's package lists. Deleting it made that clean-up fall back to
// the host's configuration and empty the host's lists. The hook empties
// the rest of /tmp.
func TestCustomizeKeepsMmdebstrapsAptConfig(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("customize.sh installs files owned by root: CI runs as root")
		}
		t.Skip("customize.sh installs files owned by root")
	}
	root := t.TempDir()
	for _, d := range []string{"etc", "tmp/left-over", "var/log", "var/lib/apt/lists/partial", "usr/lib/python3/dist-packages"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(root, "tmp", "mmdebstrap.apt.conf.Ab12Cd34Ef56")
	for path, text := range map[string]string{
		conf:                                        "Dir \"" + root + "\";\n",
		filepath.Join(root, "tmp/left-over/x"):      "x",
		filepath.Join(root, "tmp/stray"):            "y",
		filepath.Join(root, "var/lib/apt/lists/l"):  "z",
		filepath.Join(root, "etc/passwd"):           "root:x:0:0:root:/root:/bin/sh\n",
		filepath.Join(root, "etc/group"):            "root:x:0:\n",
		filepath.Join(root, "var/log/dpkg.log"):     "log",
		filepath.Join(root, "usr/lib/python3/t.py"): "",
	} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "customize.sh", root)
	cmd.Env = append(os.Environ(), "MMDEBSTRAP_APT_CONFIG="+conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("customize.sh: %v\n%s", err, out)
	}
	if _, err := os.Stat(conf); err != nil {
		t.Fatalf("mmdebstrap's apt configuration is gone: %v (its clean-up would then empty the host's package lists)", err)
	}
	for _, gone := range []string{"tmp/left-over", "tmp/stray", "var/lib/apt/lists/l", "var/log/dpkg.log"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still in the root filesystem (%v)", gone, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "home/user")); err != nil {
		t.Errorf("the sandbox user's home was not made: %v", err)
	}
}
