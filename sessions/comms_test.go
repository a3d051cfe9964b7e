package sessions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/sessions"
	"github.com/glassroom/glassroom/sessions/sessionstest"
)

// The session's side of comms with the fake kernel: ownership, limits,
// the subscribers of the side stream, restarts. The real kernels'
// widgets are tested through the gateway's two faces.

// commManager is a fake manager with cfg, run in parallel, and the fake
// kernels it dialed so far, newest last.
func commManager(t *testing.T, cfg sessions.Config) (*sessions.Manager, func() []*sessionstest.Kernel) {
	t.Helper()
	t.Parallel()
	m, rt := sessionstest.NewManager(t, cfg)
	return m, rt.Kernels
}

func kernelMsg(id, msgType, content string) *kernel.Message {
	return &kernel.Message{Header: kernel.Header{MsgID: id, MsgType: msgType}, Content: json.RawMessage(content)}
}

// nextSide reads the next side message, failing after 10 s.
func nextSide(t *testing.T, c <-chan sessions.SideMessage) sessions.SideMessage {
	t.Helper()
	select {
	case m, ok := <-c:
		if !ok {
			t.Fatal("side subscription closed")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no side message within 10s")
	}
	return sessions.SideMessage{}
}

func comm(id string, extra ...string) json.RawMessage {
	return json.RawMessage(`{"comm_id":"` + id + `","data":{}` + strings.Join(extra, "") + `}`)
}

func wantErr(t *testing.T, what string, err, sentinel error) {
	t.Helper()
	var ce *sessions.CommError
	if !errors.Is(err, sentinel) || !errors.As(err, &ce) || ce.Public() == "" {
		t.Fatalf("%s: %v, want %v", what, err, sentinel)
	}
}

// TestCommOwnership: a comm the kernel opened is every client's; one a
// client opened is its own, and another client's comm_msg and comm_close
// to it are refused; closed comms, unknown ids and reopened ids are
// refused; what passes reaches the kernel as it was sent.
func TestCommOwnership(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	k := kernels()[0]
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()

	k.Emit(kernelMsg("o1", kernel.MsgCommOpen, `{"comm_id":"k1","target_name":"jupyter.widget","data":{"state":{}}}`))
	if got := nextSide(t, side); got.MsgType != kernel.MsgCommOpen || got.MsgID != "o1" || commIDOf(got) != "k1" || string(got.Parent) != "{}" {
		t.Fatalf("side message %+v", got)
	}
	for _, owner := range []string{"a", "b"} {
		if _, err := s.First().Comms().SendComm(owner, kernel.MsgCommMsg, comm("k1"), nil, nil); err != nil {
			t.Fatalf("%s messaging the kernel's comm: %v", owner, err)
		}
	}
	if _, err := s.First().Comms().SendComm("a", kernel.MsgCommOpen, comm("a1", `,"target_name":"t"`), json.RawMessage(`{"m":1}`), [][]byte{{1, 2}}); err != nil {
		t.Fatalf("a opens a1: %v", err)
	}
	_, err := s.First().Comms().SendComm("b", kernel.MsgCommMsg, comm("a1"), nil, nil)
	wantErr(t, "b messages a's comm", err, sessions.ErrCommNotOwned)
	_, err = s.First().Comms().SendComm("b", kernel.MsgCommClose, comm("a1"), nil, nil)
	wantErr(t, "b closes a's comm", err, sessions.ErrCommNotOwned)
	_, err = s.First().Comms().SendComm("b", kernel.MsgCommOpen, comm("a1", `,"target_name":"t"`), nil, nil)
	wantErr(t, "b reopens a's comm", err, sessions.ErrBadComm)
	_, err = s.First().Comms().SendComm("b", kernel.MsgCommOpen, comm("k1", `,"target_name":"t"`), nil, nil)
	wantErr(t, "b reopens the kernel's comm", err, sessions.ErrBadComm)
	if _, err := s.First().Comms().SendComm("a", kernel.MsgCommMsg, comm("a1"), nil, nil); err != nil {
		t.Fatalf("a messages a1: %v", err)
	}
	if _, err := s.First().Comms().SendComm("a", kernel.MsgCommClose, comm("a1"), nil, nil); err != nil {
		t.Fatalf("a closes a1: %v", err)
	}
	_, err = s.First().Comms().SendComm("a", kernel.MsgCommMsg, comm("a1"), nil, nil)
	wantErr(t, "a messages its closed comm", err, sessions.ErrBadComm)
	_, err = s.First().Comms().SendComm("a", kernel.MsgCommMsg, comm("nope"), nil, nil)
	wantErr(t, "an unknown comm", err, sessions.ErrBadComm)

	// The kernel closes k1: nobody may message it.
	k.Emit(kernelMsg("c1", kernel.MsgCommClose, `{"comm_id":"k1","data":{}}`))
	nextSide(t, side)
	_, err = s.First().Comms().SendComm("a", kernel.MsgCommMsg, comm("k1"), nil, nil)
	wantErr(t, "the kernel's closed comm", err, sessions.ErrBadComm)

	sent := k.SentMessages()
	if len(sent) != 5 {
		t.Fatalf("the kernel got %d messages, want 5: %v", len(sent), sent)
	}
	open := sent[2]
	if open.Header.MsgType != kernel.MsgCommOpen || commIDOf(sessions.SideMessage{Content: open.Content}) != "a1" || string(open.Metadata) != `{"m":1}` ||
		len(open.Buffers) != 1 || open.Buffers[0][1] != 2 {
		t.Fatalf("comm_open as sent: %+v", open)
	}
	if s.First().Comms().OpenComms() != 0 {
		t.Fatalf("%d comms open, want none", s.First().Comms().OpenComms())
	}
}

func commIDOf(m sessions.SideMessage) string {
	var c struct {
		CommID string `json:"comm_id"`
	}
	json.Unmarshal(m.Content, &c)
	return c.CommID
}

// TestCloseComms: CloseComms(owner) sends the kernel a comm_close for
// each comm owner opened and forgets them; the kernel's comms and
// another owner's stay open; an owner without comms sends nothing.
func TestCloseComms(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	k := kernels()[0]
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()
	k.Emit(kernelMsg("o1", kernel.MsgCommOpen, `{"comm_id":"k1","target_name":"jupyter.widget","data":{}}`))
	nextSide(t, side)
	for _, c := range []struct{ owner, id string }{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}} {
		if _, err := s.First().Comms().SendComm(c.owner, kernel.MsgCommOpen, comm(c.id, `,"target_name":"t"`), nil, nil); err != nil {
			t.Fatalf("%s opens %s: %v", c.owner, c.id, err)
		}
	}
	if closed, left := s.First().Comms().CloseComms("nobody"); closed != 0 || left != 0 {
		t.Fatalf("an owner without comms: closed %d, left %d", closed, left)
	}
	if closed, left := s.First().Comms().CloseComms("a"); closed != 2 || left != 0 {
		t.Fatalf("a's comms: closed %d, left %d", closed, left)
	}
	sent := k.SentMessages()
	closes := map[string]bool{}
	for _, msg := range sent[3:] {
		if msg.Header.MsgType != kernel.MsgCommClose {
			t.Fatalf("sent %+v", msg.Header)
		}
		closes[commIDOf(sessions.SideMessage{Content: msg.Content})] = true
	}
	if len(sent) != 5 || !closes["a1"] || !closes["a2"] {
		t.Fatalf("the kernel got %d messages, closing %v", len(sent), closes)
	}
	if s.First().Comms().OpenComms() != 2 {
		t.Fatalf("%d comms open, want the kernel's and b's", s.First().Comms().OpenComms())
	}
	if _, err := s.First().Comms().SendComm("b", kernel.MsgCommMsg, comm("b1"), nil, nil); err != nil {
		t.Fatalf("b's comm after a's went: %v", err)
	}
	_, err := s.First().Comms().SendComm("a", kernel.MsgCommMsg, comm("a1"), nil, nil)
	wantErr(t, "a closed comm", err, sessions.ErrBadComm)
}

// TestCommMalformed: what is not a comm message is refused with
// ErrBadComm and a reason, and never reaches the kernel.
func TestCommMalformed(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{MaxCommBytes: 1000})
	s := fakeSession(t, m)
	k := kernels()[0]
	for _, c := range []struct {
		what, owner, msgType, content, metadata string
		buffers                                 [][]byte
	}{
		{"another type", "a", "execute_request", `{"comm_id":"x","target_name":"t"}`, "", nil},
		{"no owner", "", kernel.MsgCommOpen, `{"comm_id":"x","target_name":"t"}`, "", nil},
		{"content not an object", "a", kernel.MsgCommOpen, `[1]`, "", nil},
		{"content not JSON", "a", kernel.MsgCommOpen, `{"comm_id":`, "", nil},
		{"no comm id", "a", kernel.MsgCommOpen, `{"target_name":"t"}`, "", nil},
		{"a number for a comm id", "a", kernel.MsgCommOpen, `{"comm_id":7,"target_name":"t"}`, "", nil},
		{"an empty comm id", "a", kernel.MsgCommOpen, `{"comm_id":"","target_name":"t"}`, "", nil},
		{"a long comm id", "a", kernel.MsgCommOpen, `{"comm_id":"` + strings.Repeat("x", 129) + `","target_name":"t"}`, "", nil},
		{"a control character", "a", kernel.MsgCommOpen, `{"comm_id":"x\n","target_name":"t"}`, "", nil},
		{"no target", "a", kernel.MsgCommOpen, `{"comm_id":"x"}`, "", nil},
		{"data not an object", "a", kernel.MsgCommOpen, `{"comm_id":"x","target_name":"t","data":"s"}`, "", nil},
		{"metadata not an object", "a", kernel.MsgCommOpen, `{"comm_id":"x","target_name":"t"}`, `"m"`, nil},
		{"too many buffers", "a", kernel.MsgCommOpen, `{"comm_id":"x","target_name":"t"}`, "", make([][]byte, 17)},
		{"too large", "a", kernel.MsgCommOpen, `{"comm_id":"x","target_name":"t"}`, "", [][]byte{make([]byte, 1000)}},
	} {
		var md json.RawMessage
		if c.metadata != "" {
			md = json.RawMessage(c.metadata)
		}
		_, err := s.First().Comms().SendComm(c.owner, c.msgType, json.RawMessage(c.content), md, c.buffers)
		wantErr(t, c.what, err, sessions.ErrBadComm)
	}
	if _, err := s.First().Comms().SendCommParent("a", json.RawMessage(`[]`), kernel.MsgCommOpen, comm("x", `,"target_name":"t"`), nil, nil); !errors.Is(err, sessions.ErrBadComm) {
		t.Fatalf("a parent header that is no object: %v", err)
	}
	if n := len(k.SentMessages()); n != 0 {
		t.Fatalf("%d malformed messages reached the kernel", n)
	}
}

// TestCommLimits: at most MaxComms comms open (the kernel's beyond it are
// relayed, not tracked).
func TestCommLimits(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{MaxComms: 3, CommRate: -1})
	s := fakeSession(t, m)
	k := kernels()[0]
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()
	for _, id := range []string{"a", "b", "c"} {
		if _, err := s.First().Comms().SendComm("o", kernel.MsgCommOpen, comm(id, `,"target_name":"t"`), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.First().Comms().SendComm("o", kernel.MsgCommOpen, comm("d", `,"target_name":"t"`), nil, nil)
	wantErr(t, "a comm past the limit", err, sessions.ErrCommLimit)
	k.Emit(kernelMsg("o1", kernel.MsgCommOpen, `{"comm_id":"k","target_name":"t","data":{}}`))
	if got := nextSide(t, side); commIDOf(got) != "k" {
		t.Fatalf("the kernel's comm past the limit was not relayed: %+v", got)
	}
	_, err = s.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil)
	wantErr(t, "an untracked comm", err, sessions.ErrBadComm)
	if _, err := s.First().Comms().SendComm("o", kernel.MsgCommClose, comm("a"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.First().Comms().SendComm("o", kernel.MsgCommOpen, comm("d", `,"target_name":"t"`), nil, nil); err != nil {
		t.Fatalf("a comm after one closed: %v", err)
	}
}

// TestCommRate: a session's clients send at most CommRate comm messages a
// second, in bursts of CommBurst; the rest are refused with ErrCommRate.
func TestCommRate(t *testing.T) {
	m2, kernels2 := commManager(t, sessions.Config{CommRate: 1, CommBurst: 3})
	s2 := fakeSession(t, m2)
	k2 := kernels2()[0]
	k2.Emit(kernelMsg("o1", kernel.MsgCommOpen, `{"comm_id":"k","target_name":"t","data":{}}`))
	side2, cancel2 := s2.SubscribeKernel(context.Background())
	defer cancel2()
	k2.Emit(kernelMsg("o2", kernel.MsgCommMsg, `{"comm_id":"k","data":{}}`))
	nextSide(t, side2) // the comm_open is tracked before anything after it is delivered
	start := time.Now()
	ok, refused := 0, 0
	for range 50 {
		_, err := s2.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil)
		switch {
		case err == nil:
			ok++
		case errors.Is(err, sessions.ErrCommRate):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if allowed := 3 + int(time.Since(start)/time.Second) + 1; ok > allowed || refused == 0 || ok < 3 {
		t.Fatalf("%d sent and %d refused at 1/s in bursts of 3", ok, refused)
	}
	if n := len(k2.SentMessages()); n != ok {
		t.Fatalf("the kernel got %d, %d were accepted", n, ok)
	}
}

// TestCommBacklog: at most MaxCommBacklog comm messages the kernel has
// not handled are outstanding (a kernel busy with a cell reads no shell:
// past its queue a send would block, and every send on shell behind it);
// past them a client's message is refused with ErrCommRate, not sent.
// The kernel's status for a message (busy: those before it are handled;
// idle: it too) and an execution's reply make room again.
func TestCommBacklog(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{CommRate: -1})
	s := fakeSession(t, m)
	k := kernels()[0]
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()
	k.Emit(kernelMsg("o1", kernel.MsgCommOpen, `{"comm_id":"k","target_name":"t","data":{}}`))
	nextSide(t, side)
	ids := make([]string, 0, sessions.MaxCommBacklog)
	for i := range sessions.MaxCommBacklog {
		id, err := s.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil)
		if err != nil {
			t.Fatalf("message %d of the backlog: %v", i, err)
		}
		ids = append(ids, id)
	}
	_, err := s.First().Comms().SendComm("other", kernel.MsgCommMsg, comm("k"), nil, nil)
	wantErr(t, "a message past the backlog", err, sessions.ErrCommRate)
	if n := len(k.SentMessages()); n != sessions.MaxCommBacklog {
		t.Fatalf("the kernel got %d messages", n)
	}
	status := func(parent, state string) {
		t.Helper()
		k.Emit(&kernel.Message{Header: kernel.Header{MsgID: "st-" + parent + state, MsgType: "status"},
			Parent: kernel.Header{MsgID: parent}, Content: json.RawMessage(`{"execution_state":"` + state + `"}`)})
		if got := nextSide(t, side); got.ParentID != parent {
			t.Fatalf("side message %+v", got)
		}
	}
	// busy for the 11th: the first ten are handled.
	status(ids[10], "busy")
	for i := range 10 {
		if _, err := s.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil); err != nil {
			t.Fatalf("message %d after ten were handled: %v", i, err)
		}
	}
	_, err = s.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil)
	wantErr(t, "past the backlog again", err, sessions.ErrCommRate)
	// idle for the 11th: it is handled too.
	status(ids[10], "idle")
	if _, err := s.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil); err != nil {
		t.Fatalf("after the 11th's idle: %v", err)
	}
	_, err = s.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil)
	wantErr(t, "past the backlog once more", err, sessions.ErrCommRate)
	// An execution's reply: everything sent before it is handled.
	if x := exec(t, s, "1", 0); x.Status != sessions.StatusOK {
		t.Fatalf("execution: %+v", x)
	}
	for i := range sessions.MaxCommBacklog {
		if _, err := s.First().Comms().SendComm("o", kernel.MsgCommMsg, comm("k"), nil, nil); err != nil {
			t.Fatalf("message %d after an execution: %v", i, err)
		}
	}
}

// TestSideSubscribers: every subscriber gets every side message; one that
// does not read loses what does not fit in its buffer, and holds up
// neither the others nor the session's executions; cancelling, the
// context's end and the session's close end a subscription.
func TestSideSubscribers(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{SideBuffer: 4})
	s := fakeSession(t, m)
	k := kernels()[0]
	stalled, cancelStalled := s.SubscribeKernel(context.Background())
	defer cancelStalled()
	reader, cancelReader := s.SubscribeKernel(context.Background())
	defer cancelReader()
	ctx, cancelCtx := context.WithCancel(context.Background())
	byCtx, cancelByCtx := s.SubscribeKernel(ctx)
	defer cancelByCtx()
	cancelCtx()
	if _, ok := <-byCtx; ok {
		t.Fatal("a subscription whose context ended got a message")
	}
	for i := range 10 {
		k.Emit(kernelMsg("m"+string(rune('0'+i)), "stream", `{"name":"stdout","text":"x"}`))
		if got := nextSide(t, reader); got.MsgID != "m"+string(rune('0'+i)) {
			t.Fatalf("reader got %s, want m%d", got.MsgID, i)
		}
		if e := run(t, s, "print:ok", 0); e.Status != sessions.StatusOK {
			t.Fatalf("execution while a subscriber stalls: %+v", e)
		}
	}
	if len(stalled) != 4 || s.SideDropped() != 6 {
		t.Fatalf("the stalled subscriber holds %d, %d dropped; want 4 and 6", len(stalled), s.SideDropped())
	}
	if got := <-stalled; got.MsgID != "m0" {
		t.Fatalf("the stalled subscriber kept %s first, want the oldest", got.MsgID)
	}
	cancelStalled()
	cancelStalled()
	for range stalled { // closed once drained
	}
	if err := m.Delete(context.Background(), "t", s.ID()); err != nil {
		t.Fatal(err)
	}
	for range reader { // closed by the session's end
	}
	if c, _ := s.SubscribeKernel(context.Background()); c != nil {
		if _, ok := <-c; ok {
			t.Fatal("a subscription of a closed session got a message")
		}
	}
}

// TestSideAcrossRestart: a subscription goes on with the new kernel after
// a restart, whose comms start afresh.
func TestSideAcrossRestart(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()
	kernels()[0].Emit(kernelMsg("o1", kernel.MsgCommOpen, `{"comm_id":"k1","target_name":"t","data":{}}`))
	nextSide(t, side)
	if _, err := s.First().Comms().SendComm("a", kernel.MsgCommOpen, comm("a1", `,"target_name":"t"`), nil, nil); err != nil {
		t.Fatal(err)
	}
	if s.First().Comms().OpenComms() != 2 {
		t.Fatalf("%d comms open, want 2", s.First().Comms().OpenComms())
	}
	if err := s.First().Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.First().Comms().OpenComms() != 0 {
		t.Fatalf("%d comms open after the restart", s.First().Comms().OpenComms())
	}
	_, err := s.First().Comms().SendComm("a", kernel.MsgCommMsg, comm("k1"), nil, nil)
	wantErr(t, "the old kernel's comm", err, sessions.ErrBadComm)
	ks := kernels()
	ks[len(ks)-1].Emit(kernelMsg("o2", kernel.MsgCommOpen, `{"comm_id":"k2","target_name":"t","data":{}}`))
	if got := nextSide(t, side); got.MsgID != "o2" {
		t.Fatalf("after the restart: %+v", got)
	}
	if _, err := s.First().Comms().SendComm("b", kernel.MsgCommMsg, comm("k2"), nil, nil); err != nil {
		t.Fatalf("the new kernel's comm: %v", err)
	}
}

// TestSideParentAndCommInfo: the output and status of a comm message's
// handler name the header its sender gave as their parent, a status of
// anything else is not relayed; comm_info lists the kernel's comms, which
// every client may then message.
func TestSideParentAndCommInfo(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	k := kernels()[0]
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()
	k.SetCommInfo(`{"status":"ok","comms":{"old1":{"target_name":"jupyter.widget"},"old2":{"target_name":"jupyter.widget"},"bad\n":{"target_name":"x"}}}`)
	info, err := s.First().Comms().CommInfo(context.Background(), "jupyter.widget")
	if err != nil || len(info) != 2 || info["old1"].TargetName != "jupyter.widget" {
		t.Fatalf("comm info %v %v", info, err)
	}
	parent := json.RawMessage(`{"msg_id":"client-7","msg_type":"comm_msg","session":"s"}`)
	id, err := s.First().Comms().SendCommParent("b", parent, kernel.MsgCommMsg, comm("old1"), nil, nil)
	if err != nil {
		t.Fatalf("a comm comm_info listed: %v", err)
	}
	// The late idle of something the faces render themselves is not
	// relayed; a comm handler's status is.
	late := kernelMsg("st0", "status", `{"execution_state":"idle"}`)
	late.Parent = kernel.Header{MsgID: "a-kernel-info-request", MsgType: "kernel_info_request"}
	k.Emit(late)
	busy := kernelMsg("st1", "status", `{"execution_state":"busy"}`)
	busy.Parent = kernel.Header{MsgID: id, MsgType: kernel.MsgCommMsg}
	k.Emit(busy)
	if got := nextSide(t, side); got.MsgID != "st1" || string(got.Parent) != string(parent) {
		t.Fatalf("the comm handler's status: %+v", got)
	}
	out := kernelMsg("out1", "stream", `{"name":"stdout","text":"clicked"}`)
	out.Parent = kernel.Header{MsgID: id, MsgType: kernel.MsgCommMsg}
	k.Emit(out)
	other := kernelMsg("out2", "stream", `{"name":"stdout","text":"thread"}`)
	other.Parent = kernel.Header{MsgID: "an-old-cell", MsgType: "execute_request"}
	k.Emit(other)
	bad := kernelMsg("out3", "stream", `not json`)
	k.Emit(bad)
	got := nextSide(t, side)
	if got.ParentID != id || string(got.Parent) != string(parent) {
		t.Fatalf("handler output %+v, want the sender's header as parent", got)
	}
	got = nextSide(t, side)
	var p kernel.Header
	if json.Unmarshal(got.Parent, &p) != nil || p.MsgID != "an-old-cell" || got.ParentID != "an-old-cell" {
		t.Fatalf("thread output %+v, want the kernel's parent", got)
	}
	k.Emit(kernelMsg("out4", "stream", `{"name":"stdout","text":"next"}`))
	if got := nextSide(t, side); got.MsgID != "out4" || s.SideDropped() != 1 {
		t.Fatalf("after a malformed message: %+v, %d dropped", got, s.SideDropped())
	}
	if _, err := s.First().Comms().CommInfo(context.Background(), "bad\x00"); !errors.Is(err, sessions.ErrBadComm) {
		t.Fatalf("a bad target name: %v", err)
	}
}

// TestSideBeforeOutput: a side message the kernel sent before an output of
// the running cell is in the subscriber's channel when the output's event
// is published, however slow the side stream's owner (a widget's
// comm_open before the display that shows it).
func TestSideBeforeOutput(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	kernels()[0].SetSideDelay(50 * time.Millisecond)
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()
	sub := s.Subscribe(s.LastSeq())
	defer sub.Close()
	for _, n := range []string{"1", "2", "3"} {
		if _, err := s.First().Submit(sessions.ExecRequest{ID: "x" + n, Code: "side:" + n}); err != nil {
			t.Fatal(err)
		}
		ev := next(t, sub, sessions.EventStream)
		select {
		case m := <-side:
			if m.MsgID != "side-"+n {
				t.Fatalf("side message %s before output %s", m.MsgID, n)
			}
		default:
			t.Fatalf("output %s was published before the side message the kernel sent first", ev.Text)
		}
		next(t, sub, sessions.EventDone)
	}
}

// TestCommsInEveryContext: a context's kernel's comm_open reaches the
// session's side stream marked with its context; a client's comm_msg to
// that comm goes to that kernel (CommKernel), not the first; a client's
// comm_open goes to the context it names; and a client's comms are
// closed in every kernel when it leaves.
func TestCommsInEveryContext(t *testing.T) {
	m, kernels := commManager(t, sessions.Config{})
	s := fakeSession(t, m)
	info, err := s.Contexts().Create(context.Background(), "r", "")
	if err != nil {
		t.Fatal(err)
	}
	ks := kernels()
	if len(ks) != 2 {
		t.Fatalf("%d kernels, want the first and the context's", len(ks))
	}
	rk := ks[1]
	side, cancel := s.SubscribeKernel(context.Background())
	defer cancel()

	rk.Emit(kernelMsg("o1", kernel.MsgCommOpen, `{"comm_id":"rc","target_name":"jupyter.widget","data":{}}`))
	if got := nextSide(t, side); got.Context != info.ID || commIDOf(got) != "rc" {
		t.Fatalf("the context's comm_open: %+v, want context %s", got, info.ID)
	}
	k, err := s.Contexts().CommKernel("rc", "")
	if err != nil || k.ID() != info.ID {
		t.Fatalf("CommKernel(rc): %v %v, want the context's kernel", k, err)
	}
	if _, err := k.Comms().SendComm("a", kernel.MsgCommMsg, comm("rc"), nil, nil); err != nil {
		t.Fatalf("a messages the context's comm: %v", err)
	}
	_, err = s.First().Comms().SendComm("a", kernel.MsgCommMsg, comm("rc"), nil, nil)
	wantErr(t, "the context's comm through the first kernel", err, sessions.ErrBadComm)

	opener, err := s.Contexts().CommKernel("", info.ID)
	if err != nil || opener != k {
		t.Fatalf("CommKernel for a comm_open naming the context: %v %v", opener, err)
	}
	if _, err := opener.Comms().SendComm("a", kernel.MsgCommOpen, comm("a1", `,"target_name":"t"`), nil, nil); err != nil {
		t.Fatalf("a opens a1 in the context: %v", err)
	}
	s.Contexts().CloseComms("a")
	sent := rk.SentMessages()
	last := sent[len(sent)-1]
	if last.Header.MsgType != kernel.MsgCommClose || !strings.Contains(string(last.Content), `"a1"`) {
		t.Fatalf("the context's kernel got %s %s last, want a1's comm_close", last.Header.MsgType, last.Content)
	}
	if n := s.First().Comms().OpenComms(); n != 0 {
		t.Fatalf("the first kernel has %d comms open", n)
	}
}
