package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/glassroom/glassroom/sessions"
)

// take returns the stream's next item, failing after 10 s.
func take(t *testing.T, st *sessions.Stream) sessions.StreamItem {
	t.Helper()
	select {
	case it, ok := <-st.C:
		if !ok {
			t.Fatal("stream closed")
		}
		return it
	case <-time.After(10 * time.Second):
		t.Fatal("no stream item in 10 s")
	}
	return sessions.StreamItem{}
}

// takeEvent skips to the stream's next event of type typ, returning the
// side messages it passed.
func takeEvent(t *testing.T, st *sessions.Stream, typ sessions.EventType) (sessions.Event, []sessions.SideMessage) {
	t.Helper()
	var side []sessions.SideMessage
	for {
		it := take(t, st)
		if it.Side != nil {
			side = append(side, *it.Side)
			continue
		}
		if it.Event.Type == typ {
			return *it.Event, side
		}
	}
}

// A side message comes before the output the kernel sent after it, and
// events come once each, in order: whether the reader keeps up or comes
// late, when both channels hold items.
func TestStreamMergesSideMessagesInOrder(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(map[bool]string{false: "keeping-up", true: "late"}[late], func(t *testing.T) { streamInOrder(t, late) })
	}
}

func streamInOrder(t *testing.T, late bool) {
	m, kernels := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	kernels()[0].SetSideDelay(5 * time.Millisecond)
	st := s.Stream(context.Background(), s.LastSeq())
	defer st.Close()
	last := s.LastSeq()
	runs := []string{"1", "2", "3", "4", "5", "6"}
	if late {
		for _, n := range runs {
			run(t, s, "side:"+n, 10*time.Second)
		}
	}
	for _, n := range runs {
		if !late {
			if _, err := s.First().Submit(sessions.ExecRequest{ID: "x" + n, Code: "side:" + n}); err != nil {
				t.Fatal(err)
			}
		}
		var side []sessions.SideMessage
		for {
			it := take(t, st)
			if it.Side != nil {
				side = append(side, *it.Side)
				continue
			}
			if it.Event.Seq <= last {
				t.Fatalf("event %d after %d", it.Event.Seq, last)
			}
			last = it.Event.Seq
			if it.Event.Type == sessions.EventStream {
				if len(side) != 1 || side[0].MsgID != "side-"+n {
					t.Fatalf("late %v: output %s came after side messages %v, want [side-%s]", late, it.Event.Text, side, n)
				}
				break
			}
		}
		takeEvent(t, st, sessions.EventDone)
	}
}

// A reader slower than the event log's subscriber buffer gets every event
// all the same (replayed from the backlog), and Resume goes back.
func TestStreamRecoversFromLagAndResumes(t *testing.T) {
	m, _ := commManager(t, sessions.Config{SubscriberBuffer: 2})
	s := fakeSession(t, m)
	since := s.LastSeq()
	st := s.Stream(context.Background(), since)
	defer st.Close()
	const runs = 20
	for i := range runs {
		// Each execution publishes several events; the stream is not read
		// meanwhile, so its subscription overflows.
		run(t, s, "print:"+string(rune('a'+i)), 10*time.Second)
	}
	end := s.LastSeq()
	seen := since
	for seen < end {
		it := take(t, st)
		if it.Event == nil {
			continue
		}
		if it.Event.Seq != seen+1 {
			t.Fatalf("event %d after %d: the lag lost events", it.Event.Seq, seen)
		}
		seen = it.Event.Seq
	}
	st.Resume(since)
	if ev, _ := takeEvent(t, st, sessions.EventStream); ev.Text != "a" {
		t.Fatalf("after Resume(%d): %q, want the first execution's output again", since, ev.Text)
	}
}

// The stream closes when its session ends.
func TestStreamClosesWithTheSession(t *testing.T) {
	m, _ := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	st := s.Stream(context.Background(), s.LastSeq())
	defer st.Close()
	if err := m.Delete(context.Background(), "t", s.ID()); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case _, ok := <-st.C:
			if !ok {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the stream stayed open after its session was deleted")
		}
	}
}
