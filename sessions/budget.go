package sessions

import (
	"container/list"
	"strings"
	"sync"

	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// BudgetShares bound what one tenant, and one session, may hold of a
// Budget. A zero field sets no bound beyond the budget's size.
type BudgetShares struct {
	// Tenant bounds everything one tenant's sessions hold together: event
	// backlogs, the outputs REST executions collect and kept command output.
	Tenant int64
	// Kept bounds kept command output (what Commands keeps for Get) of all
	// tenants together; KeptTenant that of one tenant, KeptSession that of
	// one session.
	Kept, KeptTenant, KeptSession int64
}

// Budget is a gateway-wide allowance of bytes, shared by every session's
// event backlog, the outputs REST executions collect, and the command
// output kept for later reading. Each session draws on it through its
// Account.
//
// Live output (backlogs, collected executions) comes first: when it needs
// room that kept command output holds, the oldest kept output is evicted
// (emptied and marked truncated), gateway-wide if the whole budget is
// spent, the tenant's own if its share is. Kept output only ever evicts
// kept output, of its own session, tenant or (past the gateway-wide kept
// bound) of anyone: one tenant's kept data never truncates another's live
// execution.
//
// It is safe for concurrent use; its lock is taken last (after a hub's or
// a Commands' lock), and it takes only a keptOutput's lock under it.
type Budget struct {
	max    int64
	shares BudgetShares

	mu      sync.Mutex
	used    int64 // live and kept, all tenants
	kept    int64 // kept, all tenants
	tenants map[string]*tenantUse
	lots    list.List // of *keptOutput holding bytes, oldest first
}

// tenantUse is one tenant's part of a Budget, guarded by Budget.mu.
type tenantUse struct {
	used, kept int64
	accounts   int
	lots       list.List
}

// NewBudget returns a budget of size bytes, shared within shares.
func NewBudget(size int64, shares BudgetShares) *Budget {
	return &Budget{max: size, shares: shares, tenants: map[string]*tenantUse{}}
}

// Used returns the bytes taken now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Kept returns the bytes kept command output holds now.
func (b *Budget) Kept() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.kept
}

// TenantUsed returns the bytes tenant's sessions hold now.
func (b *Budget) TenantUsed(tenant string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := b.tenants[tenant]; t != nil {
		return t.used
	}
	return 0
}

// Max returns the budget's size.
func (b *Budget) Max() int64 { return b.max }

// Account opens one session's account, drawing on tenant's share. The
// caller must Close it when the session ends.
func (b *Budget) Account(tenant string) *Account {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tenants[tenant]
	if t == nil {
		t = &tenantUse{}
		b.tenants[tenant] = t
	}
	t.accounts++
	return &Account{b: b, tenant: tenant, t: t}
}

// Account is one session's draw on a Budget (its contexts share it). It is
// safe for concurrent use.
type Account struct {
	b      *Budget
	tenant string
	t      *tenantUse

	// guarded by b.mu
	kept   int64
	lots   list.List
	closed bool
}

// TryAcquire takes n bytes of live output if they are available, evicting
// kept command output (the tenant's own when its share is spent, anyone's
// when the whole budget is) to make room.
func (a *Account) TryAcquire(n int) bool {
	b := a.b
	need := int64(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.closed || need > b.max {
		return false
	}
	if s := b.shares.Tenant; s > 0 {
		if need > s {
			return false
		}
		for a.t.used+need > s {
			if !b.evictOldest(&a.t.lots, nil) {
				return false
			}
		}
	}
	for b.used+need > b.max {
		if !b.evictOldest(&b.lots, nil) {
			return false
		}
	}
	b.used += need
	a.t.used += need
	return true
}

// Release returns n bytes of live output.
func (a *Account) Release(n int) {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= int64(n)
	a.t.used -= int64(n)
	b.forgetTenantIfIdle(a)
}

// Close ends the account: it takes nothing more (what it still holds is
// released by its holders as before). Closing twice is harmless.
func (a *Account) Close() {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	a.t.accounts--
	b.forgetTenantIfIdle(a)
}

func (b *Budget) forgetTenantIfIdle(a *Account) {
	if a.t.accounts == 0 && a.t.used == 0 && b.tenants[a.tenant] == a.t {
		delete(b.tenants, a.tenant)
	}
}

// newKept returns an empty kept output of this account's session.
func (a *Account) newKept() *keptOutput { return &keptOutput{a: a} }

// keep adds text of stream st to k if the shares allow, evicting older
// kept output (never k's own) first: the session's when its share is
// spent, then the tenant's, then anyone's. It reports whether text was
// kept; once not, k keeps nothing more (what it kept stays).
func (a *Account) keep(k *keptOutput, st sandbox.Stream, text string) bool {
	b := a.b
	need := int64(len(text))
	b.mu.Lock()
	defer b.mu.Unlock()
	if k.dropped || k.full || a.closed {
		return false
	}
	if !b.roomForKept(a, k, need) {
		k.full = true // what k keeps stays a prefix of the output
		return false
	}
	if k.bytes == 0 {
		k.global = b.lots.PushBack(k)
		k.tenant = a.t.lots.PushBack(k)
		k.session = a.lots.PushBack(k)
	}
	k.bytes += need
	a.kept += need
	a.t.kept += need
	a.t.used += need
	b.kept += need
	b.used += need
	k.mu.Lock()
	if st == sandbox.Stderr {
		k.stderr.WriteString(text)
	} else {
		k.stdout.WriteString(text)
	}
	k.mu.Unlock()
	return true
}

// roomForKept evicts kept output other than k until need more bytes of
// k's fit every bound, or reports that they cannot.
func (b *Budget) roomForKept(a *Account, k *keptOutput, need int64) bool {
	type bound struct {
		used  *int64
		limit int64
		lots  *list.List
	}
	s := b.shares
	bounds := []bound{
		{&a.kept, s.KeptSession, &a.lots},
		{&a.t.kept, s.KeptTenant, &a.t.lots},
		{&b.kept, s.Kept, &b.lots},
		{&a.t.used, s.Tenant, &a.t.lots},
		{&b.used, b.max, &b.lots},
	}
	for _, x := range bounds {
		if x.limit <= 0 {
			continue
		}
		if k.bytes+need > x.limit {
			return false
		}
		for *x.used+need > x.limit {
			if !b.evictOldest(x.lots, k) {
				return false
			}
		}
	}
	return true
}

// evictOldest empties the oldest kept output on lots other than spare,
// reporting whether there was one.
func (b *Budget) evictOldest(lots *list.List, spare *keptOutput) bool {
	for e := lots.Front(); e != nil; e = e.Next() {
		if k := e.Value.(*keptOutput); k != spare {
			b.dropLocked(k, true)
			return true
		}
	}
	return false
}

// drop forgets k's output: its bytes go back to the budget.
func (a *Account) drop(k *keptOutput) {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	a.b.dropLocked(k, false)
}

// dropLocked empties k and returns its bytes; evicted marks it truncated
// for its readers. b.mu is held.
func (b *Budget) dropLocked(k *keptOutput, evicted bool) {
	if k.dropped {
		return
	}
	k.dropped = true
	a := k.a
	if k.bytes > 0 {
		b.lots.Remove(k.global)
		a.t.lots.Remove(k.tenant)
		a.lots.Remove(k.session)
		a.kept -= k.bytes
		a.t.kept -= k.bytes
		a.t.used -= k.bytes
		b.kept -= k.bytes
		b.used -= k.bytes
		k.bytes = 0
	}
	k.mu.Lock()
	k.stdout, k.stderr = strings.Builder{}, strings.Builder{}
	k.evicted = k.evicted || evicted
	k.mu.Unlock()
	b.forgetTenantIfIdle(a)
}

// keptOutput is one command's stdout and stderr kept for Get, charged to
// its session's Account. Once dropped (evicted, or too big for a share) it
// keeps nothing more.
type keptOutput struct {
	a *Account

	// guarded by Budget.mu
	bytes                   int64
	dropped, full           bool
	global, tenant, session *list.Element

	mu             sync.Mutex // taken under Budget.mu, never the other way
	stdout, stderr strings.Builder
	evicted        bool
}

// text returns what k keeps, and whether some of it was evicted.
func (k *keptOutput) text() (stdout, stderr string, evicted bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stdout.String(), k.stderr.String(), k.evicted
}
