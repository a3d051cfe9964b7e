package sessions

import "testing"

func TestHubReplayClampsAndReportsGaps(t *testing.T) {
	h := newHub(3, 1<<20)
	for i := 0; i < 5; i++ {
		h.publish(Event{Type: EventStream, Text: "x"})
	}
	// seq 1..5 published; the backlog keeps 3..5.
	sub := h.subscribe(0, 8)
	first := <-sub.C
	if first.Type != EventGap || first.Seq != 2 {
		t.Fatalf("want a gap event before seq 3, got %+v", first)
	}
	if next := <-sub.C; next.Seq != 3 {
		t.Fatalf("replay starts at %d", next.Seq)
	}
	sub.Close()
	// A position from the future is clamped: the next event is delivered.
	future := h.subscribe(99, 8)
	h.publish(Event{Type: EventStream, Text: "y"})
	if ev := <-future.C; ev.Seq != 6 || ev.Text != "y" {
		t.Fatalf("after since=99 got %+v", ev)
	}
	future.Close()
}
