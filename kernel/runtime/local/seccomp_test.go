package local

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"testing"

	"golang.org/x/net/bpf"
)

// The numbers the filter must deny, written out independently of
// seccomp.go: arm64 from include/uapi/asm-generic/unistd.h, x86_64 from
// arch/x86/entry/syscalls/syscall_64.tbl (as in golang.org/x/sys/unix's
// zsysnum_linux_{arm64,amd64}.go).
var (
	arm64Denied = map[string]uint32{
		"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "bpf": 280, "userfaultfd": 282,
		"perf_event_open": 241, "keyctl": 219, "add_key": 217, "request_key": 218,
		"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
		"kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
		"mount": 40, "umount2": 39, "pivot_root": 41, "fsopen": 430, "fsmount": 432, "fsconfig": 431,
		"fspick": 433, "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
		"setns": 268, "unshare": 97, "open_by_handle_at": 265, "name_to_handle_at": 264,
		"fanotify_init": 262, "quotactl": 60, "acct": 89, "syslog": 116, "vhangup": 58,
		"swapon": 224, "swapoff": 225, "reboot": 142,
		"clock_settime": 112, "settimeofday": 170, "adjtimex": 171, "clock_adjtime": 266,
	}
	amd64Denied = map[string]uint32{
		"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "bpf": 321, "userfaultfd": 323,
		"perf_event_open": 298, "keyctl": 250, "add_key": 248, "request_key": 249,
		"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
		"kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
		"mount": 165, "umount2": 166, "pivot_root": 155, "fsopen": 430, "fsmount": 432, "fsconfig": 431,
		"fspick": 433, "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
		"setns": 308, "unshare": 272, "open_by_handle_at": 304, "name_to_handle_at": 303,
		"fanotify_init": 300, "quotactl": 179, "acct": 163, "syslog": 103, "vhangup": 153,
		"swapon": 167, "swapoff": 168, "reboot": 169,
		"clock_settime": 227, "settimeofday": 164, "adjtimex": 159, "clock_adjtime": 305,
	}
	// A kernel's everyday calls, which must pass. On arm64 some of these
	// numbers are denied calls on x86_64 (41 is pivot_root on arm64 and
	// socket on x86_64; 56, openat, is clone on x86_64), so a table mixed
	// up between the two fails here.
	arm64Allowed = map[string]uint32{"read": 63, "write": 64, "openat": 56, "close": 57, "clone": 220, "clone3": 435,
		"execve": 221, "mmap": 222, "exit_group": 94, "futex": 98, "epoll_pwait": 22, "connect": 203, "getpid": 172}
	amd64Allowed = map[string]uint32{"read": 0, "write": 1, "openat": 257, "close": 3, "clone": 56, "clone3": 435,
		"execve": 59, "mmap": 9, "exit_group": 231, "futex": 202, "epoll_pwait": 281, "connect": 42, "getpid": 39}
)

const (
	auditArchI386 = 0x40000003
	auditArchARM  = 0x40000028
	afInet        = 2
	afPacket      = 17
	afAlg         = 38
	afVsock       = 40
	retEPERM      = seccompRetErrno | 1
	retEAFNOSUPP  = seccompRetErrno | 97
)

// filterVM decodes the bytes bwrap would get (struct sock_filter[],
// little-endian) and loads them into x/net/bpf's VM.
func filterVM(t *testing.T, goarch string) (*bpf.VM, []bpf.Instruction) {
	t.Helper()
	b, err := seccompFilter(goarch)
	if err != nil || len(b) == 0 || len(b)%8 != 0 {
		t.Fatalf("%s: filter of %d bytes, %v", goarch, len(b), err)
	}
	raw := make([]bpf.RawInstruction, len(b)/8)
	for i := range raw {
		ins := b[8*i:]
		raw[i] = bpf.RawInstruction{Op: binary.LittleEndian.Uint16(ins), Jt: ins[2], Jf: ins[3], K: binary.LittleEndian.Uint32(ins[4:])}
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("%s: the filter has instructions x/net/bpf does not know: %v", goarch, prog)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("%s: %v", goarch, err)
	}
	return vm, prog
}

// verdict runs the filter on a system call (struct seccomp_data). The
// kernel's loads are native 32-bit words; the VM's are big-endian, so
// each word is stored big-endian here to be read as the kernel would.
func verdict(t *testing.T, vm *bpf.VM, arch, nr, arg0 uint32) uint32 {
	t.Helper()
	data := make([]byte, 64) // nr, arch, instruction pointer, 6 arguments
	binary.BigEndian.PutUint32(data[seccompDataNr:], nr)
	binary.BigEndian.PutUint32(data[seccompDataArch:], arch)
	binary.BigEndian.PutUint32(data[seccompDataArg0:], arg0)
	ret, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(ret)
}

func names(m map[string]uint32) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestSeccompFilterPerArchitecture: amd64 and arm64 each get a filter
// that kills a process of any other ABI, denies the same system calls by
// name under that architecture's own numbers, lets a kernel's everyday
// calls through, and allows only the expected socket families.
func TestSeccompFilterPerArchitecture(t *testing.T) {
	for _, tc := range []struct {
		goarch         string
		audit          uint32
		foreign        []uint32
		denied, allowd map[string]uint32
		socket, pair   uint32
	}{
		{"arm64", auditArchAarch64, []uint32{auditArchX86_64, auditArchARM, auditArchI386, 0}, arm64Denied, arm64Allowed, 198, 199},
		{"amd64", auditArchX86_64, []uint32{auditArchAarch64, auditArchI386, auditArchARM, 0}, amd64Denied, amd64Allowed, 41, 53},
	} {
		t.Run(tc.goarch, func(t *testing.T) {
			vm, prog := filterVM(t, tc.goarch)
			if len(prog) < 2 || prog[0] != (bpf.LoadAbsolute{Off: seccompDataArch, Size: 4}) ||
				prog[1] != (bpf.JumpIf{Cond: bpf.JumpEqual, Val: tc.audit, SkipTrue: 1}) || prog[2] != (bpf.RetConstant{Val: seccompRetKillProcess}) {
				t.Fatalf("the filter does not start by checking AUDIT_ARCH %#x: %v", tc.audit, prog[:min(3, len(prog))])
			}
			for _, arch := range tc.foreign {
				if v := verdict(t, vm, arch, tc.allowd["read"], 0); v != seccompRetKillProcess {
					t.Errorf("a call in ABI %#x is not killed: %#x", arch, v)
				}
			}
			var table []string
			for _, s := range deniedSyscalls {
				table = append(table, s.name)
			}
			sort.Strings(table)
			if !slices.Equal(table, names(tc.denied)) {
				t.Fatalf("the filter denies %v by name, want %v", table, names(tc.denied))
			}
			for _, name := range names(tc.denied) {
				if v := verdict(t, vm, tc.audit, tc.denied[name], 0); v != retEPERM {
					t.Errorf("%s (%d) is not denied with EPERM: %#x", name, tc.denied[name], v)
				}
			}
			for _, name := range names(tc.allowd) {
				if v := verdict(t, vm, tc.audit, tc.allowd[name], 0); v != seccompRetAllow {
					t.Errorf("%s (%d) is not allowed: %#x", name, tc.allowd[name], v)
				}
			}
			for _, nr := range []uint32{tc.socket, tc.pair} {
				for fam, want := range map[uint32]uint32{afInet: seccompRetAllow, 1: seccompRetAllow, 10: seccompRetAllow, 16: seccompRetAllow,
					afPacket: retEAFNOSUPP, afAlg: retEAFNOSUPP, afVsock: retEAFNOSUPP} {
					if v := verdict(t, vm, tc.audit, nr, fam); v != want {
						t.Errorf("socket call %d, family %d: %#x, want %#x", nr, fam, v, want)
					}
				}
			}
			if tc.goarch == "amd64" { // the x32 ABI: the same calls under other numbers
				for _, nr := range []uint32{0x40000000 | amd64Denied["bpf"], 0x40000000 | amd64Allowed["read"]} {
					if v := verdict(t, vm, tc.audit, nr, 0); v != retEPERM {
						t.Errorf("x32 call %#x is not denied: %#x", nr, v)
					}
				}
			}
		})
	}
}

// TestSeccompAmd64FilterUnchanged: building the filter from per-architecture
// tables left the amd64 program byte for byte what it was when it was
// written from x/sys/unix's amd64 constants (update this hash only with a
// deliberate change of the denied list).
func TestSeccompAmd64FilterUnchanged(t *testing.T) {
	b, err := seccompFilter("amd64")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); len(b) != 472 || got != "59dba7f4b2f1afdbbe0d4dfaeca56912f29d8b111bbdea71689179f96bc662da" {
		t.Fatalf("amd64 filter changed: %d bytes, sha256 %s", len(b), got)
	}
}

func TestNoSeccompFilterForOtherArchitectures(t *testing.T) {
	for _, arch := range []string{"riscv64", "386", "arm", "ppc64le", "s390x", ""} {
		if b, err := seccompFilter(arch); b != nil || !errors.Is(err, ErrNoSeccomp) {
			t.Errorf("%q: %d bytes, %v; want ErrNoSeccomp", arch, len(b), err)
		}
	}
}
