package wsconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/testkit"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// frame is what a test server's reader saw: a frame, or the error that
// ended the connection.
type frame struct {
	owner string
	size  int
	large bool
	err   error
}

// largeServer serves WebSockets whose reader reads within lim, for the
// owner the URL's ?owner= names, and reports every frame on seen. A frame
// whose first byte is 'k' is kept: its share is not given back by the
// next Next, but by the func sent on kept.
type largeServer struct {
	g    *Group
	url  string
	seen chan frame
	kept chan func()
}

func newLargeServer(t *testing.T, large LargeFrames, lim Limits) *largeServer {
	t.Helper()
	s := &largeServer{g: NewGroup(zerolog.Nop(), large), seen: make(chan frame, 16), kept: make(chan func(), 4)}
	up := NewUpgrader(nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, ctx, done, ok := s.g.Accept(&up, w, r, 1024)
		if !ok {
			return
		}
		defer done()
		owner := r.URL.Query().Get("owner")
		lim := lim
		lim.Owner = owner
		frames := s.g.NewReader(conn, lim)
		defer frames.Close()
		for {
			_, data, err := frames.Next(ctx)
			if err != nil {
				s.seen <- frame{owner: owner, err: err}
				return
			}
			if len(data) > 0 && data[0] == 'k' {
				s.kept <- frames.Keep()
			}
			s.seen <- frame{owner: owner, size: len(data), large: frames.Large()}
		}
	}))
	t.Cleanup(func() {
		s.g.Shutdown()
		srv.Close()
		s.g.Wait()
	})
	s.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return s
}

func (s *largeServer) dial(t *testing.T, owner string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(s.url+"?owner="+owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *largeServer) next(t *testing.T, what string) frame {
	t.Helper()
	select {
	case f := <-s.seen:
		return f
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the server read nothing", what)
		return frame{}
	}
}

// waitUsers waits until n of owner's connections hold or wait for its part
// of the budget: a frame sent is waiting once it is counted.
func (s *largeServer) waitUsers(t *testing.T, owner string, n int) {
	t.Helper()
	users := func() int {
		b := s.g.large
		b.mu.Lock()
		defer b.mu.Unlock()
		if o := b.owners[owner]; o != nil {
			return o.users
		}
		return 0
	}
	testkit.Eventually(t, 20*time.Second, func() bool { return users() == n },
		"%d users of %s's part of the budget: last %d", n, owner, testkit.Seen(func() any { return users() }))
}

func send(t *testing.T, c *websocket.Conn, first byte, n int) {
	t.Helper()
	b := bytes.Repeat([]byte{'x'}, n)
	b[0] = first
	if err := c.WriteMessage(websocket.BinaryMessage, b); err != nil {
		t.Fatal(err)
	}
}

// closeCode reads c until its close frame and returns its code.
func closeCode(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		_, _, err := c.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		if err != nil {
			t.Fatalf("want a close frame, got %v", err)
		}
	}
}

// TestLargeFrames: ordinary frames are read as they come; a frame above
// Limits.Frame is read when the group's budget allows, and holds it until
// the next frame (or until its keeper gives it back); a frame that waited
// for the budget longer than Wait closes its connection with 1013, the
// others go on; a frame above Limits.Large closes with 1009.
func TestLargeFrames(t *testing.T) {
	const ordinary, large = 1 << 10, 64 << 10
	s := newLargeServer(t, LargeFrames{Budget: large, PerOwner: large, Wait: 5 * time.Second}, Limits{Frame: ordinary, Large: large})

	a := s.dial(t, "a")
	send(t, a, 'x', ordinary)
	if f := s.next(t, "an ordinary frame"); f.size != ordinary || f.large {
		t.Fatalf("an ordinary frame: %+v", f)
	}
	send(t, a, 'x', large)
	if f := s.next(t, "a large frame"); f.size != large || !f.large {
		t.Fatalf("a large frame: %+v", f)
	}
	// The budget came back with the next frame: another large one reads.
	send(t, a, 'x', ordinary)
	s.next(t, "the frame after")
	send(t, a, 'k', large) // kept: the budget stays taken
	if f := s.next(t, "a kept large frame"); f.size != large || !f.large {
		t.Fatalf("a kept large frame: %+v", f)
	}

	release := <-s.kept

	// Another connection's large frame waits, then its connection closes
	// with 1013; a's ordinary frames go on meanwhile.
	b := s.dial(t, "a")
	send(t, b, 'x', large)
	send(t, a, 'x', ordinary)
	var busy, meanwhile int
	for range 2 {
		switch f := s.next(t, "a's frame while b waits, b's end"); {
		case errors.Is(f.err, ErrLargeFrameBusy):
			busy++
		case f.err == nil && f.size == ordinary && !f.large:
			meanwhile++
		default:
			t.Fatalf("while b waited for the budget: %+v", f)
		}
	}
	if busy != 1 || meanwhile != 1 {
		t.Fatalf("%d busy, %d of a's frames", busy, meanwhile)
	}
	if code := closeCode(t, b); code != websocket.CloseTryAgainLater {
		t.Fatalf("b closed with %d, want 1013", code)
	}

	// A large frame waiting when the keeper gives the budget back is read.
	c := s.dial(t, "a")
	send(t, c, 'x', large)
	s.waitUsers(t, "a", 2) // c waits for a's part, which a's kept frame holds
	release()
	release() // a second call gives back nothing more
	if f := s.next(t, "c's large frame"); f.size != large || !f.large {
		t.Fatalf("c's large frame once the budget came back: %+v", f)
	}

	// Above Limits.Large: 1009, and the other connections go on.
	send(t, c, 'x', large+1)
	if f := s.next(t, "a frame above the large limit"); f.err == nil {
		t.Fatalf("a frame above the large limit was read: %+v", f)
	}
	if code := closeCode(t, c); code != websocket.CloseMessageTooBig {
		t.Fatalf("c closed with %d, want 1009", code)
	}
	send(t, a, 'x', large) // c's share went back as its reader read on (gorilla refuses the frame by its header, before any share)
	if f := s.next(t, "a's large frame at the end"); f.size != large {
		t.Fatalf("a's large frame at the end: %+v", f)
	}
}

// TestLargeLimitBoundedByBudget: a Limits.Large above an owner's part of
// the budget is cut to it (a frame it lets through could never get its
// share), and a reader without Large reads ordinary frames only.
func TestLargeLimitBoundedByBudget(t *testing.T) {
	for _, c := range []struct {
		name  string
		large LargeFrames
		lim   Limits
		most  int  // the largest frame read
		big   bool // it is a large one
	}{
		{"Large cut to an owner's part", LargeFrames{Budget: 16 << 10, PerOwner: 8 << 10}, Limits{Frame: 1 << 10, Large: 1 << 20}, 8 << 10, true},
		{"no Large", LargeFrames{}, Limits{Frame: 1 << 10}, 1 << 10, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newLargeServer(t, c.large, c.lim)
			a := s.dial(t, "a")
			send(t, a, 'x', c.most)
			if f := s.next(t, "the largest frame"); f.size != c.most || f.large != c.big {
				t.Fatalf("the largest frame: %+v", f)
			}
			send(t, a, 'x', c.most+1)
			if f := s.next(t, "a frame above it"); f.err == nil {
				t.Fatalf("a frame above the largest was read: %+v", f)
			}
			if code := closeCode(t, a); code != websocket.CloseMessageTooBig {
				t.Fatalf("closed with %d, want 1009", code)
			}
		})
	}
}

// TestLargeFrameWaitEndsWithContext: a reader waiting for its share
// returns when its connection's context ends (a gateway shutting down).
func TestLargeFrameWaitEndsWithContext(t *testing.T) {
	b := newLargeBudget(LargeFrames{Budget: 10, PerOwner: 10, Wait: time.Hour})
	if err := b.all.Acquire(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.acquire(ctx, "a", 5)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire after its context ended: %v", err)
	}
	b.all.Release(10)
	if len(b.owners) != 0 {
		t.Fatalf("owners left after a failed wait: %v", b.owners)
	}
}

// TestLargeFrameOneSharePerConnection: a connection holds one share: its
// next large frame waits until the kept one's share comes back, even
// with budget to spare; its ordinary frames do not wait.
func TestLargeFrameOneSharePerConnection(t *testing.T) {
	const ordinary, large = 1 << 10, 16 << 10
	s := newLargeServer(t, LargeFrames{Budget: 8 * large, PerOwner: 8 * large, Wait: 20 * time.Second}, Limits{Frame: ordinary, Large: large})
	a := s.dial(t, "a")
	send(t, a, 'k', large)
	if f := s.next(t, "the kept frame"); f.size != large {
		t.Fatalf("the kept frame: %+v", f)
	}
	release := <-s.kept
	send(t, a, 'x', large)
	select {
	case f := <-s.seen:
		t.Fatalf("a second large frame was read while the connection's share was kept: %+v", f)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if f := s.next(t, "the second large frame"); f.size != large || !f.large {
		t.Fatalf("the second large frame: %+v", f)
	}
	send(t, a, 'x', ordinary)
	if f := s.next(t, "an ordinary frame"); f.size != ordinary {
		t.Fatalf("an ordinary frame: %+v", f)
	}
}

// TestLargeFramePerOwner: an owner holding its part of the budget waits
// (then gets 1013) while another owner's large frame is read at once.
func TestLargeFramePerOwner(t *testing.T) {
	const ordinary, large = 1 << 10, 16 << 10
	s := newLargeServer(t, LargeFrames{Budget: 4 * large, PerOwner: 2 * large, Wait: time.Second}, Limits{Frame: ordinary, Large: large})
	var releases []func()
	for i := range 2 {
		c := s.dial(t, "a")
		send(t, c, 'k', large)
		if f := s.next(t, fmt.Sprint("a's kept frame ", i)); f.size != large {
			t.Fatalf("a's kept frame %d: %+v", i, f)
		}
		releases = append(releases, <-s.kept)
	}
	third := s.dial(t, "a")
	send(t, third, 'x', large)
	b := s.dial(t, "b")
	send(t, b, 'x', large)
	if f := s.next(t, "b's large frame"); f.owner != "b" || f.size != large {
		t.Fatalf("b's large frame while a holds its part: %+v", f)
	}
	if f := s.next(t, "a's third large frame"); f.owner != "a" || !errors.Is(f.err, ErrLargeFrameBusy) {
		t.Fatalf("a's third large frame: %+v", f)
	}
	if code := closeCode(t, third); code != websocket.CloseTryAgainLater {
		t.Fatalf("a's third connection closed with %d, want 1013", code)
	}
	for _, r := range releases {
		r()
	}
}

// TestLargeFrameTrickled: a client that sends the start of a large frame
// and stalls loses its connection after LargeFrames.Read, and its share
// comes back: another connection of its owner reads a large frame.
func TestLargeFrameTrickled(t *testing.T) {
	const ordinary, large = 1 << 10, 64 << 10
	s := newLargeServer(t, LargeFrames{Budget: large, PerOwner: large, Wait: 20 * time.Second, Read: 300 * time.Millisecond}, Limits{Frame: ordinary, Large: large})
	a := s.dial(t, "a")
	w, err := a.NextWriter(websocket.BinaryMessage)
	if err != nil {
		t.Fatal(err)
	}
	// More than the writer's buffer: fragments go out, the message is
	// never finished.
	if _, err := w.Write(bytes.Repeat([]byte{'x'}, 16<<10)); err != nil {
		t.Fatal(err)
	}
	if f := s.next(t, "the stalled frame"); f.err == nil {
		t.Fatalf("the stalled frame was read: %+v", f)
	}
	b := s.dial(t, "a")
	send(t, b, 'x', large)
	if f := s.next(t, "a large frame after the stalled one"); f.size != large || !f.large {
		t.Fatalf("a large frame after the stalled one: %+v", f)
	}
}

// BenchmarkReader: frames through a Reader over loopback, an ordinary
// one (64 KiB) and a large one (4 MiB: a 3 MiB file in base64), the
// large one taking and giving back the group's budget each time.
func BenchmarkReader(b *testing.B) {
	for _, size := range []int{64 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			g := NewGroup(zerolog.Nop(), LargeFrames{})
			up := NewUpgrader(nil)
			got := make(chan int, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				conn, ctx, done, ok := g.Accept(&up, w, r, 1024)
				if !ok {
					return
				}
				defer done()
				frames := g.NewReader(conn, Limits{Frame: 1 << 20, Large: 8 << 20})
				frames.limit.SetLimit(rate.Inf) // the frame rate is not what is measured
				defer frames.Close()
				for {
					_, data, err := frames.Next(ctx)
					if err != nil {
						return
					}
					got <- len(data)
				}
			}))
			defer srv.Close()
			c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			msg := bytes.Repeat([]byte{'x'}, size)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				if err := c.WriteMessage(websocket.BinaryMessage, msg); err != nil {
					b.Fatal(err)
				}
				if n := <-got; n != size {
					b.Fatalf("read %d bytes", n)
				}
			}
			b.StopTimer()
			c.Close()
			g.Shutdown()
			g.Wait()
		})
	}
}
