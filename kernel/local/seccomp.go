package local

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox. They are kernel attack
// surface a Python kernel has no use for (most recent container escapes
// start from one of them) or would let the code change the sandbox itself.
// Nested user namespaces are refused separately (bwrap --disable-userns).
var deniedSyscalls = []uint32{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_BPF, unix.SYS_USERFAULTFD, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_FSOPEN, unix.SYS_FSMOUNT, unix.SYS_FSCONFIG,
	unix.SYS_FSPICK, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_MOUNT_SETATTR,
	unix.SYS_SETNS, unix.SYS_UNSHARE, unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_FANOTIFY_INIT, unix.SYS_QUOTACTL, unix.SYS_ACCT, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT,
	unix.SYS_CLOCK_SETTIME, unix.SYS_SETTIMEOFDAY, unix.SYS_ADJTIMEX, unix.SYS_CLOCK_ADJTIME,
}

const (
	seccompRetAllow       = 0x7fff0000
	seccompRetErrno       = 0x00050000
	seccompRetKillProcess = 0x80000000
	auditArchX86_64       = 0xc000003e
	x32SyscallBit         = 0x40000000
)

// seccompFilter returns the compiled BPF program bwrap --seccomp expects
// (struct sock_filter[], native byte order), or nil on architectures it
// does not cover (only x86_64 is written here).
func seccompFilter() ([]byte, error) {
	if runtime.GOARCH != "amd64" {
		return nil, nil
	}
	n := uint8(len(deniedSyscalls))
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchX86_64, SkipTrue: 1},
		bpf.RetConstant{Val: seccompRetKillProcess},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
		// The x32 ABI would reach the same calls under other numbers.
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipTrue: n + 1},
	}
	for i, nr := range deniedSyscalls {
		// Jump to the EPERM return after the remaining checks and the allow.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: n - uint8(i)})
	}
	prog = append(prog,
		bpf.RetConstant{Val: seccompRetAllow},
		bpf.RetConstant{Val: seccompRetErrno | uint32(unix.EPERM)},
	)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("local: seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}
