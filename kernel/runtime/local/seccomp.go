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

// allowedSocketFamilies are the address families a kernel may open
// sockets in; any other (vsock, packet, alg, and the exotic families that
// autoload kernel modules) fails with EAFNOSUPPORT.
var allowedSocketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

const (
	seccompRetAllow       = 0x7fff0000
	seccompRetErrno       = 0x00050000
	seccompRetKillProcess = 0x80000000
	auditArchX86_64       = 0xc000003e
	x32SyscallBit         = 0x40000000
	seccompDataNr         = 0
	seccompDataArch       = 4
	seccompDataArg0       = 16 // low 32 bits on little-endian
)

// program assembles classic BPF with forward jumps to labels.
type program struct {
	ins    []bpf.Instruction
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at    int
	label string
}

func (p *program) emit(i bpf.Instruction) { p.ins = append(p.ins, i) }

// jumpIfEqual jumps to label when A == val, else falls through.
func (p *program) jumpIfEqual(val uint32, label string) {
	p.fixups = append(p.fixups, fixup{len(p.ins), label})
	p.emit(bpf.JumpIf{Cond: bpf.JumpEqual, Val: val})
}

func (p *program) jumpIfAtLeast(val uint32, label string) {
	p.fixups = append(p.fixups, fixup{len(p.ins), label})
	p.emit(bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: val})
}

func (p *program) jump(label string) {
	p.fixups = append(p.fixups, fixup{len(p.ins), label})
	p.emit(bpf.Jump{})
}

func (p *program) label(name string) { p.labels[name] = len(p.ins) }

func (p *program) assemble() ([]bpf.RawInstruction, error) {
	for _, f := range p.fixups {
		target, ok := p.labels[f.label]
		skip := target - f.at - 1
		if !ok || skip < 0 {
			return nil, fmt.Errorf("local: seccomp: bad jump to %s", f.label)
		}
		switch i := p.ins[f.at].(type) {
		case bpf.JumpIf:
			if skip > 255 {
				return nil, fmt.Errorf("local: seccomp: jump to %s too far", f.label)
			}
			i.SkipTrue = uint8(skip)
			p.ins[f.at] = i
		case bpf.Jump:
			p.ins[f.at] = bpf.Jump{Skip: uint32(skip)}
		}
	}
	return bpf.Assemble(p.ins)
}

// seccompFilter returns the compiled BPF program bwrap --seccomp expects
// (struct sock_filter[], native byte order), or nil on architectures it
// does not cover (only x86_64 is written here).
func seccompFilter() ([]byte, error) {
	if runtime.GOARCH != "amd64" {
		return nil, nil
	}
	p := &program{labels: map[string]int{}}
	p.emit(bpf.LoadAbsolute{Off: seccompDataArch, Size: 4})
	p.jumpIfEqual(auditArchX86_64, "native")
	p.emit(bpf.RetConstant{Val: seccompRetKillProcess})
	p.label("native")
	p.emit(bpf.LoadAbsolute{Off: seccompDataNr, Size: 4})
	// The x32 ABI would reach the same calls under other numbers.
	p.jumpIfAtLeast(x32SyscallBit, "deny")
	p.jumpIfEqual(unix.SYS_SOCKET, "socket")
	p.jumpIfEqual(unix.SYS_SOCKETPAIR, "socket")
	for _, nr := range deniedSyscalls {
		p.jumpIfEqual(nr, "deny")
	}
	p.jump("allow")
	p.label("socket")
	p.emit(bpf.LoadAbsolute{Off: seccompDataArg0, Size: 4})
	for _, fam := range allowedSocketFamilies {
		p.jumpIfEqual(fam, "allow")
	}
	p.emit(bpf.RetConstant{Val: seccompRetErrno | uint32(unix.EAFNOSUPPORT)})
	p.label("allow")
	p.emit(bpf.RetConstant{Val: seccompRetAllow})
	p.label("deny")
	p.emit(bpf.RetConstant{Val: seccompRetErrno | uint32(unix.EPERM)})
	raw, err := p.assemble()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		out = binary.LittleEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.LittleEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}
