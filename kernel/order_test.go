package kernel

import "testing"

// A side message waits for the request events numbered before it, in any
// order of release, and for those only; releasing twice, or a number that
// was never held, changes nothing.
func TestOutputOrder(t *testing.T) {
	o := newOutputOrder()
	a, b := o.next(), o.next() // two events of a request
	o.hold(a)
	o.hold(b)
	side := o.next() // a side message after them
	later := o.next()
	o.hold(later) // an event after the side message
	if o.blocker(side) == nil {
		t.Fatal("the side message was ready with two earlier events held")
	}
	ch := o.blocker(side)
	o.release(b) // out of order: a is still held
	select {
	case <-ch:
		t.Fatal("released b: the lowest held number did not move, yet waiters were woken")
	default:
	}
	if o.blocker(side) == nil {
		t.Fatal("ready with a still held")
	}
	o.release(a)
	select {
	case <-ch:
	default:
		t.Fatal("releasing the lowest held number did not wake the waiters")
	}
	if o.blocker(side) != nil {
		t.Fatal("not ready once the earlier events were released (a later one is held)")
	}
	o.release(a)
	o.release(0)
	o.release(12345)
	if o.blocker(later) != nil || o.blocker(later+1) == nil {
		t.Fatal("the later event is held: exactly what comes after it waits")
	}
	o.release(later)
	o.hold(0) // a stdin event (input_request): never numbered, never waited for
	if o.blocker(later+1) != nil || len(o.held) != 0 || len(o.pending) != 0 {
		t.Fatalf("all released: pending %v held %v", o.pending, o.held)
	}
}
