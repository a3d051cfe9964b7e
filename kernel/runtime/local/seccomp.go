package local

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// ErrNoSeccomp is returned by New (and Validate) on an architecture
// glassroom has no seccomp filter for, unless InsecureNoSeccomp is set.
var ErrNoSeccomp = errors.New("local: no seccomp filter for this architecture (only amd64 and arm64 have one): kernels would run without a system call filter; (unsafe) enable InsecureNoSeccomp to run them anyway")

// syscallNr is one system call and its number on each architecture the
// filter covers: x86_64's arch/x86/entry/syscalls/syscall_64.tbl, arm64's
// asm-generic unistd.h (which has no open, fork and the like: a table of
// its own, never amd64's numbers).
type syscallNr struct {
	name         string
	amd64, arm64 uint32
}

// deniedSyscalls fail with EPERM inside the sandbox. They are kernel attack
// surface a Python kernel has no use for (most recent container escapes
// start from one of them) or would let the code change the sandbox itself.
// Nested user namespaces are refused separately (bwrap --disable-userns).
// Every architecture denies this same list, by name.
var deniedSyscalls = []syscallNr{
	{"ptrace", 101, 117}, {"process_vm_readv", 310, 270}, {"process_vm_writev", 311, 271},
	{"bpf", 321, 280}, {"userfaultfd", 323, 282}, {"perf_event_open", 298, 241},
	{"keyctl", 250, 219}, {"add_key", 248, 217}, {"request_key", 249, 218},
	{"io_uring_setup", 425, 425}, {"io_uring_enter", 426, 426}, {"io_uring_register", 427, 427},
	{"kexec_load", 246, 104}, {"kexec_file_load", 320, 294}, {"init_module", 175, 105}, {"finit_module", 313, 273}, {"delete_module", 176, 106},
	{"mount", 165, 40}, {"umount2", 166, 39}, {"pivot_root", 155, 41}, {"fsopen", 430, 430}, {"fsmount", 432, 432}, {"fsconfig", 431, 431},
	{"fspick", 433, 433}, {"move_mount", 429, 429}, {"open_tree", 428, 428}, {"mount_setattr", 442, 442},
	{"setns", 308, 268}, {"unshare", 272, 97}, {"open_by_handle_at", 304, 265}, {"name_to_handle_at", 303, 264},
	{"fanotify_init", 300, 262}, {"quotactl", 179, 60}, {"acct", 163, 89}, {"syslog", 103, 116}, {"vhangup", 153, 58},
	{"swapon", 167, 224}, {"swapoff", 168, 225}, {"reboot", 169, 142},
	{"clock_settime", 227, 112}, {"settimeofday", 164, 170}, {"adjtimex", 159, 171}, {"clock_adjtime", 305, 266},
}

// socketSyscalls are checked for their address family (argument 0).
var socketSyscalls = []syscallNr{{"socket", 41, 198}, {"socketpair", 53, 199}}

// allowedSocketFamilies are the address families a kernel may open
// sockets in; any other (vsock, packet, alg, and the exotic families that
// autoload kernel modules) fails with EAFNOSUPPORT.
var allowedSocketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}

const (
	seccompRetAllow       = 0x7fff0000
	seccompRetErrno       = 0x00050000
	seccompRetKillProcess = 0x80000000
	auditArchX86_64       = 0xc000003e
	auditArchAarch64      = 0xc00000b7
	x32SyscallBit         = 0x40000000
	seccompDataNr         = 0
	seccompDataArch       = 4
	seccompDataArg0       = 16 // low 32 bits on little-endian
)

// seccompArch is what the filter needs to know of one architecture.
type seccompArch struct {
	audit uint32 // AUDIT_ARCH_* of its native system calls
	// numberBound, when not 0, denies every number at or above it: on
	// x86_64 the x32 ABI reaches the same calls under other numbers.
	numberBound uint32
	nr          func(syscallNr) uint32
}

// seccompArchOf returns the filter's view of goarch (a GOARCH value), or
// false when there is no filter for it.
func seccompArchOf(goarch string) (seccompArch, bool) {
	switch goarch {
	case "amd64":
		return seccompArch{audit: auditArchX86_64, numberBound: x32SyscallBit, nr: func(s syscallNr) uint32 { return s.amd64 }}, true
	case "arm64":
		// A 32-bit arm (compat) process has another AUDIT_ARCH: killed.
		return seccompArch{audit: auditArchAarch64, nr: func(s syscallNr) uint32 { return s.arm64 }}, true
	}
	return seccompArch{}, false
}

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
// (struct sock_filter[], little-endian like both architectures) for goarch
// (a GOARCH value). It kills a process calling in any other architecture's
// ABI, and denies deniedSyscalls and the sockets of other families by the
// numbers of goarch. On an architecture it does not cover it returns an
// error wrapping ErrNoSeccomp.
func seccompFilter(goarch string) ([]byte, error) {
	arch, ok := seccompArchOf(goarch)
	if !ok {
		return nil, fmt.Errorf("%w (GOARCH=%s)", ErrNoSeccomp, goarch)
	}
	p := &program{labels: map[string]int{}}
	p.emit(bpf.LoadAbsolute{Off: seccompDataArch, Size: 4})
	p.jumpIfEqual(arch.audit, "native")
	p.emit(bpf.RetConstant{Val: seccompRetKillProcess})
	p.label("native")
	p.emit(bpf.LoadAbsolute{Off: seccompDataNr, Size: 4})
	if arch.numberBound != 0 {
		p.jumpIfAtLeast(arch.numberBound, "deny")
	}
	for _, s := range socketSyscalls {
		p.jumpIfEqual(arch.nr(s), "socket")
	}
	for _, s := range deniedSyscalls {
		p.jumpIfEqual(arch.nr(s), "deny")
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
