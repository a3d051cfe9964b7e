package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// claimFiles lists the claim files in dir.
func claimFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, claimPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestUIDClaimRefusesAnOverlap: a claim overlapping a live one (the same
// range, one inside it, one across either end) is refused with a
// UIDRangeInUseError naming both ranges, the holder (pid, state dir),
// --uid-base and a free base; disjoint ranges (touching ones too) are
// claimed; a released range is free again, its file gone.
func TestUIDClaimRefusesAnOverlap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "uid-ranges")
	first, err := ClaimUIDRange(dir, 200000, 1024, "/run/glassroom/local")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("claim dir not created 0755: %v %v", st, err)
	}
	if first.Base() != 200000 || first.Size() != 1024 {
		t.Fatalf("claim of %d+%d", first.Base(), first.Size())
	}
	for _, r := range []struct{ base, size int }{{200000, 1024}, {200500, 10}, {199000, 1001}, {201023, 5}, {100000, 200000}} {
		_, err := ClaimUIDRange(dir, r.base, r.size, "/run/glassroom/other")
		var inUse *UIDRangeInUseError
		if !errors.As(err, &inUse) {
			t.Fatalf("claim %d+%d over 200000+1024: %v, want a UIDRangeInUseError", r.base, r.size, err)
		}
		want := UIDRangeInUseError{Base: r.base, Size: r.size, OtherBase: 200000, OtherSize: 1024,
			PID: os.Getpid(), StateDir: "/run/glassroom/local", Free: max(r.base, 201024)}
		if *inUse != want {
			t.Errorf("claim %d+%d: %+v, want %+v", r.base, r.size, *inUse, want)
		}
		msg := err.Error()
		for _, s := range []string{"--uid-base", "200000-201023", "/run/glassroom/local", "--uid-base " + strconv.Itoa(want.Free)} {
			if !strings.Contains(msg, s) {
				t.Errorf("message %q does not name %q", msg, s)
			}
		}
	}
	below, err := ClaimUIDRange(dir, 199000, 1000, "")
	if err != nil {
		t.Fatalf("a range just below: %v", err)
	}
	above, err := ClaimUIDRange(dir, 201024, 1024, "")
	if err != nil {
		t.Fatalf("a range just above: %v", err)
	}
	// A free base skips every live claim in the way.
	var inUse *UIDRangeInUseError
	if _, err := ClaimUIDRange(dir, 199500, 1024, ""); !errors.As(err, &inUse) || inUse.Free != 202048 {
		t.Fatalf("claim across three ranges: %v, want one whose free base is 202048", err)
	}
	if n := len(claimFiles(t, dir)); n != 3 {
		t.Fatalf("%d claim files, want 3", n)
	}
	first.Release()
	first.Release() // idempotent
	(*UIDClaim)(nil).Release()
	again, err := ClaimUIDRange(dir, 200500, 10, "")
	if err != nil {
		t.Fatalf("claim in a released range: %v", err)
	}
	for _, c := range []*UIDClaim{again, below, above} {
		c.Release()
	}
	if files := claimFiles(t, dir); len(files) != 0 {
		t.Fatalf("claim files left after every release: %v", files)
	}
}

// TestUIDClaimOfADeadGatewayIsTakenOver: a claim file another live
// process holds refuses an overlapping claim, naming that process; once
// it has died (the kernel released its lock), the range is claimed and
// the dead claim's file removed. A claim file nobody holds (its gateway
// long gone) stands in no one's way either.
func TestUIDClaimOfADeadGatewayIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	held := filepath.Join(dir, "uids-300000-1024-123")
	pid, end := holdLock(t, held)
	var inUse *UIDRangeInUseError
	if _, err := ClaimUIDRange(dir, 300000, 1024, ""); !errors.As(err, &inUse) || inUse.PID != pid || inUse.OtherBase != 300000 {
		t.Fatalf("claim over a live process's (pid %d): %v", pid, err)
	}
	end()
	stale := filepath.Join(dir, "uids-301000-100-456")
	if err := os.WriteFile(stale, []byte(`{"pid":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ClaimUIDRange(dir, 300000, 2048, "")
	if err != nil {
		t.Fatalf("claim over dead claims: %v", err)
	}
	defer c.Release()
	for _, p := range []string{held, stale} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("dead claim %s not removed: %v", p, err)
		}
	}
	// Files that are no claims are left alone.
	other := filepath.Join(dir, "README")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if c2, err := ClaimUIDRange(dir, 400000, 10, ""); err != nil {
		t.Fatal(err)
	} else {
		c2.Release()
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file that is no claim: %v", err)
	}
}

// TestUIDClaimNotInherited: a child process (a kernel) does not inherit
// the claim, so a gateway that died (its descriptor closed, its file
// left behind) while its kernels live does not keep its range.
func TestUIDClaimNotInherited(t *testing.T) {
	dir := t.TempDir()
	c, err := ClaimUIDRange(dir, 5000, 100, "")
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sh", "-c", "exec cat")
	stdin, _ := child.StdinPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); child.Wait() }()
	c.f.Close() // as the gateway's death would: the file stays
	c2, err := ClaimUIDRange(dir, 5000, 100, "")
	if err != nil {
		t.Fatalf("a child process kept a dead gateway's claim: %v", err)
	}
	c2.Release()
}

// TestUIDClaimsRace: of claimers of overlapping ranges at once (in one
// process, each its own claimer), exactly one wins; of claimers of
// disjoint ranges, all do.
func TestUIDClaimsRace(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	var wg sync.WaitGroup
	claims := make([]*UIDClaim, 2*n)
	errs := make([]error, 2*n)
	for i := range 2 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := 10000 + i*10 // overlapping 100-uid ranges
			if i >= n {
				base = 100000 + i*1000 // disjoint ones
			}
			claims[i], errs[i] = ClaimUIDRange(dir, base, 100, "")
		}()
	}
	wg.Wait()
	won := 0
	for i := range n {
		var inUse *UIDRangeInUseError
		switch {
		case errs[i] == nil:
			won++
		case !errors.As(errs[i], &inUse):
			t.Errorf("claim %d: %v", i, errs[i])
		}
	}
	// The ranges 10000+10i overlap their neighbours within 10 steps: the
	// winners are at least 100 apart, so at most 2 of 16 (10000, 10100 or
	// 10150...) and at least 1.
	if won < 1 || won > 2 {
		t.Errorf("%d of the overlapping claims won", won)
	}
	for i := range n {
		for j := range n {
			if i < j && errs[i] == nil && errs[j] == nil && claims[i].Base()+100 > claims[j].Base() && claims[j].Base()+100 > claims[i].Base() {
				t.Errorf("overlapping claims %d and %d both won", claims[i].Base(), claims[j].Base())
			}
		}
	}
	for i := n; i < 2*n; i++ {
		if errs[i] != nil {
			t.Errorf("disjoint claim %d: %v", i, errs[i])
		}
	}
	for _, c := range claims {
		c.Release()
	}
}

// TestUIDClaimWaitsForTheDirectory: a claimer waits while another holds
// the claim directory's lock (only while it claims), then claims.
func TestUIDClaimWaitsForTheDirectory(t *testing.T) {
	dir := t.TempDir()
	_, end := holdLock(t, dir)
	done := make(chan error, 1)
	go func() {
		c, err := ClaimUIDRange(dir, 7000, 10, "")
		c.Release()
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("claimed while the directory was locked: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	end()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the claim did not go on once the directory was free")
	}
}

// TestClaimUIDs: Common.ClaimUIDs claims [UIDBase, UIDBase+MaxSandboxes)
// in UIDClaimDir (DefaultUIDClaimDir by default), recording the state dir;
// a relative claim dir is refused by Validate.
func TestClaimUIDs(t *testing.T) {
	c := Common{StateDir: "/state/a", UIDBase: 5000, MaxSandboxes: 10, UIDClaimDir: t.TempDir()}.WithDefaults("/x", 1)
	claim, err := c.ClaimUIDs()
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	var inUse *UIDRangeInUseError
	if _, err := ClaimUIDRange(c.UIDClaimDir, 5009, 1, ""); !errors.As(err, &inUse) || inUse.StateDir != "/state/a" || inUse.OtherSize != 10 {
		t.Fatalf("claim over Common's: %v", err)
	}
	if d := (Common{}).WithDefaults("/x", 1000).UIDClaimDir; d != DefaultUIDClaimDir {
		t.Fatalf("default claim dir %q", d)
	}
	bad := Common{UIDClaimDir: "relative"}.WithDefaults("/x", 1000)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "claim dir") {
		t.Fatalf("Validate of a relative claim dir: %v", err)
	}
	if _, err := ClaimUIDRange(t.TempDir(), maxUIDEnd-5, 10, ""); err == nil {
		t.Fatal("a range past the last uid was claimed")
	}
}

// TestUIDRangeInUseErrorWithoutAFreeBase: when no base above is free, the
// message still names the flag.
func TestUIDRangeInUseErrorWithoutAFreeBase(t *testing.T) {
	e := &UIDRangeInUseError{Base: 1000, Size: 10, OtherBase: 1000, OtherSize: 10}
	if msg := e.Error(); !strings.Contains(msg, "--uid-base N") || !strings.Contains(msg, "another gateway:") {
		t.Fatalf("message %q", msg)
	}
}
