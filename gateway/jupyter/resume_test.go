package jupyter

import (
	"fmt"
	"testing"
	"time"
)

// The bounds of the resume positions, on the map itself. The real
// gateway's test (TestJupyterResumeIsolation) shows the same through
// channels connections to real kernels.
func TestJupyterResumeBounds(t *testing.T) {
	r := newResumeMap(resumeLimits{perKernel: 4, perTenant: 10, ttl: time.Hour})
	r.put("B", "kb", "b", 7)
	// Tenant A churns far past every bound, on one kernel and on many.
	for i := range 1000 {
		r.put("A", "ka", fmt.Sprint("c", i), int64(i))
		r.put("A", fmt.Sprint("k", i), "c", int64(i))
	}
	if seq, ok := r.take("B", "kb", "b"); !ok || seq != 7 {
		t.Fatalf("B's position after A's churn: %d %v", seq, ok)
	}
	if n := r.count("A"); n != 10 {
		t.Fatalf("A keeps %d positions, want the per-tenant bound 10", n)
	}
	if n := r.count("B"); n != 0 {
		t.Fatalf("B keeps %d positions after its take", n)
	}

	// Per kernel: the oldest of that kernel goes, not another kernel's.
	r = newResumeMap(resumeLimits{perKernel: 2, perTenant: 10, ttl: time.Hour})
	r.put("A", "k1", "old", 1)
	r.put("A", "k2", "other", 2)
	r.put("A", "k1", "mid", 3)
	r.put("A", "k1", "new", 4)
	if _, ok := r.take("A", "k1", "old"); ok {
		t.Error("k1's oldest position outlived the per-kernel bound")
	}
	for _, c := range [][2]string{{"k2", "other"}, {"k1", "mid"}, {"k1", "new"}} {
		if _, ok := r.take("A", c[0], c[1]); !ok {
			t.Errorf("%v was evicted", c)
		}
	}
	// A position is taken once; saving again refreshes it in place.
	r.put("A", "k1", "c", 1)
	r.put("A", "k1", "c", 5)
	if seq, ok := r.take("A", "k1", "c"); !ok || seq != 5 {
		t.Errorf("refreshed position %d %v", seq, ok)
	}
	if _, ok := r.take("A", "k1", "c"); ok {
		t.Error("a position was taken twice")
	}
	// Positions expire; the tenant's entry goes with its last position.
	r = newResumeMap(resumeLimits{perKernel: 2, perTenant: 10, ttl: time.Microsecond})
	r.put("A", "k1", "c", 1)
	for t0 := time.Now(); time.Since(t0) <= 10*time.Microsecond; { // the position is older than its ttl
	}
	if _, ok := r.take("A", "k1", "c"); ok || len(r.tenants) != 0 {
		t.Errorf("an expired position was taken, or kept: %d tenants", len(r.tenants))
	}
}
