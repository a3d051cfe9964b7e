package python

import _ "embed"

//go:embed rootfs/usr/local/bin/sudo
var sudoShim string

// SudoShim is the sudo the kernel image installs at /usr/local/bin/sudo
// (rootfs/usr/local/bin/sudo): a sandbox has one unprivileged user and
// no root, so it runs the command as that user. The local runtime, whose
// sandboxes see the host's /usr, puts it in sandbox.ShimDir.
func SudoShim() string { return sudoShim }
