//go:build linux && (amd64 || arm64)

package local

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSeccompTableMatchesThisMachine: the filter's numbers for the
// architecture the test runs on are x/sys/unix's (generated from the
// kernel's headers). Run it on arm64 (or under qemu-aarch64) for arm64's.
func TestSeccompTableMatchesThisMachine(t *testing.T) {
	native := map[string]uint32{
		"ptrace": unix.SYS_PTRACE, "process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"bpf": unix.SYS_BPF, "userfaultfd": unix.SYS_USERFAULTFD, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"keyctl": unix.SYS_KEYCTL, "add_key": unix.SYS_ADD_KEY, "request_key": unix.SYS_REQUEST_KEY,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER, "io_uring_register": unix.SYS_IO_URING_REGISTER,
		"kexec_load": unix.SYS_KEXEC_LOAD, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD, "init_module": unix.SYS_INIT_MODULE,
		"finit_module": unix.SYS_FINIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
		"mount": unix.SYS_MOUNT, "umount2": unix.SYS_UMOUNT2, "pivot_root": unix.SYS_PIVOT_ROOT, "fsopen": unix.SYS_FSOPEN,
		"fsmount": unix.SYS_FSMOUNT, "fsconfig": unix.SYS_FSCONFIG, "fspick": unix.SYS_FSPICK, "move_mount": unix.SYS_MOVE_MOUNT,
		"open_tree": unix.SYS_OPEN_TREE, "mount_setattr": unix.SYS_MOUNT_SETATTR,
		"setns": unix.SYS_SETNS, "unshare": unix.SYS_UNSHARE, "open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
		"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT, "fanotify_init": unix.SYS_FANOTIFY_INIT, "quotactl": unix.SYS_QUOTACTL,
		"acct": unix.SYS_ACCT, "syslog": unix.SYS_SYSLOG, "vhangup": unix.SYS_VHANGUP, "swapon": unix.SYS_SWAPON,
		"swapoff": unix.SYS_SWAPOFF, "reboot": unix.SYS_REBOOT, "clock_settime": unix.SYS_CLOCK_SETTIME,
		"settimeofday": unix.SYS_SETTIMEOFDAY, "adjtimex": unix.SYS_ADJTIMEX, "clock_adjtime": unix.SYS_CLOCK_ADJTIME,
		"socket": unix.SYS_SOCKET, "socketpair": unix.SYS_SOCKETPAIR,
	}
	arch, ok := seccompArchOf(runtime.GOARCH)
	if !ok {
		t.Fatalf("no filter for %s", runtime.GOARCH)
	}
	all := append(append([]syscallNr{}, deniedSyscalls...), socketSyscalls...)
	if len(all) != len(native) {
		t.Fatalf("%d calls in the table, %d here", len(all), len(native))
	}
	for _, s := range all {
		want, ok := native[s.name]
		if !ok || arch.nr(s) != want {
			t.Errorf("%s on %s: table %d, x/sys/unix %d", s.name, runtime.GOARCH, arch.nr(s), want)
		}
	}
}
