package sessions

import (
	"strings"
	"testing"
)

func hubWith(events, bytes, subEvents, subBytes int, budget *Budget) *hub {
	return newHub(Config{BacklogEvents: events, BacklogBytes: bytes, SubscriberBuffer: subEvents, SubscriberBytes: subBytes}, budget.Account("t"), 0)
}

func TestHubReplayClampsAndReportsGaps(t *testing.T) {
	h := hubWith(3, 1<<20, 8, 1<<20, NewBudget(1<<30, BudgetShares{}))
	for i := 0; i < 5; i++ {
		h.publish(Event{Type: EventStream, Text: "x"})
	}
	// seq 1..5 published; the backlog keeps 3..5.
	sub := h.subscribe(0)
	first := <-sub.C
	if first.Type != EventGap || first.Seq != 2 {
		t.Fatalf("want a gap event before seq 3, got %+v", first)
	}
	if next := <-sub.C; next.Seq != 3 {
		t.Fatalf("replay starts at %d", next.Seq)
	}
	sub.Close()
	// A position from the future is clamped: the next event is delivered.
	future := h.subscribe(99)
	h.publish(Event{Type: EventStream, Text: "y"})
	if ev := <-future.C; ev.Seq != 6 || ev.Text != "y" {
		t.Fatalf("after since=99 got %+v", ev)
	}
	future.Close()
}

func TestHubChargesTheGatewayBudget(t *testing.T) {
	budget := NewBudget(10<<10, BudgetShares{})
	a := hubWith(1000, 1<<20, 8, 1<<20, budget)
	b := hubWith(1000, 1<<20, 8, 1<<20, budget)
	big := strings.Repeat("x", 3000)
	for i := 0; i < 10; i++ {
		a.publish(Event{Type: EventStream, Text: big})
	}
	if budget.Used() > budget.Max() || len(a.backlog) == 0 || len(a.backlog) > 3 {
		t.Fatalf("budget %d/%d, backlog %d", budget.Used(), budget.Max(), len(a.backlog))
	}
	// Another session publishing when the budget is spent loses the event
	// from its backlog (it has nothing to evict), and replay says so.
	b.publish(Event{Type: EventStream, Text: big})
	sub := b.subscribe(0)
	if ev := <-sub.C; ev.Type != EventGap {
		t.Fatalf("unkept event not reported as a gap: %+v", ev)
	}
	sub.Close()
	a.close()
	b.close()
	if budget.Used() != 0 {
		t.Fatalf("closed hubs still hold %d bytes", budget.Used())
	}
}

func TestSlowSubscriberIsDroppedByBytes(t *testing.T) {
	h := hubWith(1000, 1<<20, 1000, 8<<10, NewBudget(1<<30, BudgetShares{}))
	sub := h.subscribe(0)
	for i := 0; i < 10; i++ {
		h.publish(Event{Type: EventStream, Text: strings.Repeat("x", 2000)})
	}
	n := 0
	for range sub.C {
		n++
	}
	if !sub.Lagged() || n > 4 {
		t.Fatalf("lagged=%v after %d events of 2 KB with an 8 KB bound", sub.Lagged(), n)
	}
	// A subscriber that keeps reading is never dropped.
	fast := h.subscribe(h.seq)
	for i := 0; i < 50; i++ {
		h.publish(Event{Type: EventStream, Text: strings.Repeat("x", 2000)})
		<-fast.C
	}
	if fast.Lagged() {
		t.Fatal("a reading subscriber was dropped")
	}
	fast.Close()
}
