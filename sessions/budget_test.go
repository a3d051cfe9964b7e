package sessions

import (
	"strings"
	"sync"
	"testing"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// TestBudgetKeptYieldsToLive: one tenant's kept command output never
// takes room another tenant's live output needs: it is evicted, oldest
// first, and reads truncated.
func TestBudgetKeptYieldsToLive(t *testing.T) {
	b := NewBudget(100, BudgetShares{})
	a, c := b.Account("a"), b.Account("b")
	old, newer := a.newKept(), a.newKept()
	if !a.keep(old, sandbox.Stdout, strings.Repeat("o", 50)) || !a.keep(newer, sandbox.Stderr, strings.Repeat("n", 50)) {
		t.Fatal("kept output within the budget refused")
	}
	if !c.TryAcquire(30) {
		t.Fatal("another tenant's live output lost to kept output")
	}
	if out, _, evicted := old.text(); out != "" || !evicted {
		t.Fatalf("the oldest kept output: %q, evicted %v", out, evicted)
	}
	if _, errOut, evicted := newer.text(); len(errOut) != 50 || evicted {
		t.Fatalf("the newer kept output: %d bytes, evicted %v", len(errOut), evicted)
	}
	if a.keep(old, sandbox.Stdout, "x") {
		t.Fatal("an evicted output keeps more")
	}
	if b.Used() != 80 || b.Kept() != 50 {
		t.Fatalf("used %d, kept %d", b.Used(), b.Kept())
	}
	// Kept output evicts only kept output, never live output.
	if !c.TryAcquire(20) || !a.keep(a.newKept(), sandbox.Stdout, strings.Repeat("k", 10)) || b.Used() != 60 {
		t.Fatalf("kept output beside a full budget: used %d", b.Used())
	}
	if _, errOut, evicted := newer.text(); errOut != "" || !evicted {
		t.Fatal("kept output made room from live output")
	}
	if c.Release(50); a.keep(a.newKept(), sandbox.Stdout, strings.Repeat("k", 200)) {
		t.Fatal("kept output larger than the budget")
	}
}

// TestBudgetShares: a tenant holds at most its share (its own kept output
// goes first), a session's and a tenant's kept output their kept shares;
// kept output stays a prefix of what the command wrote.
func TestBudgetShares(t *testing.T) {
	b := NewBudget(1000, BudgetShares{Tenant: 400, Kept: 300, KeptTenant: 200, KeptSession: 120})
	a1, a2, other := b.Account("a"), b.Account("a"), b.Account("b")

	k1 := a1.newKept()
	if !a1.keep(k1, sandbox.Stdout, strings.Repeat("1", 100)) {
		t.Fatal("refused within the shares")
	}
	k2 := a1.newKept()
	if !a1.keep(k2, sandbox.Stdout, strings.Repeat("2", 100)) { // the session's share: k1 goes
		t.Fatal("the session's newest output refused")
	}
	if out, _, ev := k1.text(); out != "" || !ev {
		t.Fatalf("past the session's kept share the oldest stays: %q", out)
	}
	if a1.keep(k2, sandbox.Stdout, strings.Repeat("2", 30)) {
		t.Fatal("one output grew past the session's kept share")
	}
	if a1.keep(k2, sandbox.Stdout, "2") {
		t.Fatal("an output that was cut kept more, leaving a gap")
	}
	if out, _, ev := k2.text(); len(out) != 100 || ev {
		t.Fatalf("the cut output: %d bytes, evicted %v", len(out), ev)
	}
	k3 := a2.newKept()
	if !a2.keep(k3, sandbox.Stdout, strings.Repeat("3", 100)) || !a2.keep(a2.newKept(), sandbox.Stdout, strings.Repeat("4", 100)) {
		t.Fatal("the tenant's second session refused")
	}
	if b.TenantUsed("a") != 200 || b.Kept() != 200 { // the tenant's kept share: k2 went
		t.Fatalf("tenant a holds %d, kept %d", b.TenantUsed("a"), b.Kept())
	}
	if !a1.TryAcquire(300) { // the tenant's share: its kept output makes room
		t.Fatal("live output lost to the tenant's own kept output")
	}
	if a1.TryAcquire(200) {
		t.Fatal("a tenant took more than its share")
	}
	if !other.TryAcquire(400) {
		t.Fatal("another tenant lost its share")
	}
	if got := b.TenantUsed("a"); got > 400 {
		t.Fatalf("tenant a holds %d of its 400", got)
	}
}

// TestBudgetReleases: everything taken comes back, and closed accounts
// leave nothing behind.
func TestBudgetReleases(t *testing.T) {
	b := NewBudget(1<<20, BudgetShares{Tenant: 1 << 19, Kept: 1 << 18, KeptTenant: 1 << 17, KeptSession: 1 << 16})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := b.Account(string(rune('a' + g%3)))
			defer a.Close()
			var kept []*keptOutput
			for i := range 200 {
				if a.TryAcquire(1000) {
					defer a.Release(1000)
				}
				k := a.newKept()
				kept = append(kept, k)
				a.keep(k, sandbox.Stdout, strings.Repeat("x", 500+i))
			}
			for _, k := range kept {
				a.drop(k)
			}
		}()
	}
	wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used != 0 || b.kept != 0 || len(b.tenants) != 0 || b.lots.Len() != 0 {
		t.Fatalf("left: used %d, kept %d, %d tenants, %d kept outputs", b.used, b.kept, len(b.tenants), b.lots.Len())
	}
}
