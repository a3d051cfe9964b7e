package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/glassroom/glassroom/kernel"
	"golang.org/x/time/rate"
)

// Comms (Jupyter's comm messages: widgets, tqdm.notebook, ipympl) go both
// ways beside the execution queue: a widget acts while the kernel is idle
// and while a cell runs. The kernel's arrive on the side stream (side.go);
// a client's go to the kernel through SendComm, checked here:
//
//   - a comm the kernel opened (seen on the side stream, or listed by a
//     comm_info reply) may be messaged and closed by every client of the
//     session;
//   - a comm a client opened belongs to that client (its owner, an
//     identity the caller gives, one per connection): another client's
//     comm_msg or comm_close to it is refused (ErrCommNotOwned);
//   - a comm id not open is refused, and so is a comm_open of an id that
//     is (it would replace the kernel's comm of that id);
//   - at most Config.MaxComms comms are open at once, whoever opened
//     them: past it a client's comm_open is refused (ErrCommLimit) and
//     the kernel's are relayed but not tracked (no client can message
//     them);
//   - a comm_close from either side, or a restart of the kernel, closes
//     the comm; so does CloseComms, for the comms of a client that is
//     gone;
//   - a session sends at most Config.CommRate comm messages a second
//     (bursts of Config.CommBurst), each at most Config.MaxCommBytes with
//     at most MaxCommBuffers buffers;
//   - at most MaxCommBacklog comm messages the kernel has not handled yet
//     (a cell runs: the kernel reads shell only between cells) are
//     outstanding; past them a client's message is refused (ErrCommRate)
//     rather than sent, since a kernel that stops reading shell would
//     otherwise block the send, and every other send on shell behind it.
//     A message is known handled once the kernel's status for it, or for
//     a later comm message, arrives, or an execution sent after it
//     replies.

// Bounds on a client's comm messages.
const (
	// MaxCommIDBytes bounds a comm id (ipywidgets' are 32 hex digits).
	MaxCommIDBytes = 128
	// MaxCommTargetBytes bounds a comm's target name.
	MaxCommTargetBytes = 256
	// MaxCommBuffers bounds the binary buffers of one comm message.
	MaxCommBuffers = 16
	// maxCommParents and maxCommParentBytes bound the messages
	// remembered as sent by SendComm (and their senders' headers) and
	// executions' headers (the oldest are forgotten first).
	maxCommParents     = 4096
	maxCommParentBytes = 2 << 20
	// MaxCommBacklog bounds the comm messages sent to a kernel that it has
	// not handled yet (below the kernel's shell queue of 1000 messages,
	// past which a send blocks until the kernel reads).
	MaxCommBacklog = 256
)

// Errors of SendComm and CommInfo. Every one comes as a *CommError whose
// Public text says what is wrong.
var (
	// ErrBadComm: a malformed comm message (type, content, comm id,
	// target, size), or a comm id that is not open (or already is, for a
	// comm_open).
	ErrBadComm = errors.New("sessions: bad comm message")
	// ErrCommNotOwned: the comm was opened by another client.
	ErrCommNotOwned = errors.New("sessions: comm opened by another client")
	// ErrCommLimit: the session has Config.MaxComms comms open.
	ErrCommLimit = errors.New("sessions: too many open comms")
	// ErrCommRate: the session's comm messages came faster than
	// Config.CommRate, or faster than the kernel handles them
	// (MaxCommBacklog).
	ErrCommRate = errors.New("sessions: comm messages sent too fast")
)

// CommError is a comm message the session refuses. Reason is for the
// client; errors.Is matches Err (ErrBadComm, ErrCommNotOwned,
// ErrCommLimit or ErrCommRate).
type CommError struct {
	Reason string
	Err    error
}

func (e *CommError) Error() string { return "sessions: comm: " + e.Reason }

// Public returns the reason, for the client.
func (e *CommError) Public() string { return e.Reason }

// Unwrap returns the sentinel.
func (e *CommError) Unwrap() error { return e.Err }

func commErr(sentinel error, format string, args ...any) error {
	return &CommError{Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// CommTarget is what a comm_info reply says of one open comm.
type CommTarget struct {
	TargetName string `json:"target_name"`
}

// comms is a session's table of the open comms of its current kernel
// incarnation, with their owners, the parent headers of the comm
// messages clients sent, and the send rate limit. Safe for concurrent
// use; mu is innermost.
type comms struct {
	max      int
	maxBytes int
	limiter  *rate.Limiter // nil: no limit

	mu          sync.Mutex
	conn        KernelConn        // the incarnation the table is of
	open        map[string]string // comm id → owner ("" for the kernel's)
	parents     map[string]sentMsg
	order       []string // parents' keys, oldest first
	parentBytes int
	// seq numbers the comm messages claimed for this incarnation (the
	// last one's); every one up to handled is known handled by the
	// kernel. seq-handled is the backlog MaxCommBacklog bounds.
	seq, handled uint64
}

// sentMsg is what the session remembers of a message it sent the kernel,
// by msg_id: the header its sender gave (nil: none), and whether it is a
// comm message (its handler's status goes to clients; the status of an
// execution or request the faces make themselves).
type sentMsg struct {
	header json.RawMessage
	comm   bool
	seq    uint64 // a comm message's number (comms.seq)
}

func (t *comms) init(cfg *Config) {
	t.max, t.maxBytes = cfg.MaxComms, cfg.MaxCommBytes
	if cfg.CommRate > 0 {
		t.limiter = rate.NewLimiter(rate.Limit(cfg.CommRate), cfg.CommBurst)
	}
	t.open = map[string]string{}
	t.parents = map[string]sentMsg{}
}

// reset empties the table for incarnation c.
func (t *comms) reset(c KernelConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.conn = c
	t.open = map[string]string{}
	t.parents = map[string]sentMsg{}
	t.order, t.parentBytes = nil, 0
	t.seq, t.handled = 0, 0
}

// commID reads the comm_id of a comm message's content ("" when absent).
func commID(content json.RawMessage) string {
	var c struct {
		CommID string `json:"comm_id"`
	}
	_ = json.Unmarshal(content, &c)
	return c.CommID
}

// kernelOpened records a comm_open kernel c sent: the comm is every
// client's. Past the limit it is not tracked.
func (t *comms) kernelOpened(c KernelConn, content json.RawMessage) {
	id := commID(content)
	if !validCommID(id) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != c {
		return
	}
	if _, ok := t.open[id]; !ok && len(t.open) < t.max {
		t.open[id] = ""
	}
}

// closed records a comm_close kernel c sent.
func (t *comms) closed(c KernelConn, content json.RawMessage) {
	id := commID(content)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == c {
		delete(t.open, id)
	}
}

// learn records the comms a comm_info reply of c listed that the table
// does not know (opened before this gateway watched, say): every
// client's.
func (t *comms) learn(c KernelConn, ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != c {
		return
	}
	for _, id := range ids {
		if _, ok := t.open[id]; !ok && len(t.open) < t.max {
			t.open[id] = ""
		}
	}
}

// claim checks that owner may send msgType for comm id on incarnation c,
// reserves what it takes (a comm_open's id) and returns the msg_id to
// send it with, remembered (with parent, the sender's header) before the
// kernel can answer: want, when it is a valid msg id that no message the
// table remembers has (so no other client's, no execution's of the
// Jupyter face), else a new one. done must be called with whether it was
// sent.
func (t *comms) claim(c KernelConn, owner, msgType, id, want string, parent json.RawMessage) (msgID string, done func(sent bool), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != c {
		return "", nil, fmt.Errorf("sessions: %s: the kernel is restarting: %w", msgType, ErrKernelGone)
	}
	o, isOpen := t.open[id]
	switch {
	case msgType == kernel.MsgCommOpen && isOpen:
		return "", nil, commErr(ErrBadComm, "comm %q is open already", id)
	case msgType == kernel.MsgCommOpen && len(t.open) >= t.max:
		return "", nil, commErr(ErrCommLimit, "%d comms are open in this kernel; close some first", len(t.open))
	case msgType != kernel.MsgCommOpen && !isOpen:
		return "", nil, commErr(ErrBadComm, "no comm %q is open in this kernel", id)
	case msgType != kernel.MsgCommOpen && o != "" && o != owner:
		return "", nil, commErr(ErrCommNotOwned, "comm %q was opened by another client", id)
	case t.seq-t.handled >= MaxCommBacklog:
		return "", nil, commErr(ErrCommRate, "the kernel has not handled the %d comm messages sent to it yet (a cell runs, or a comm's handler is slow); send again once it has", t.seq-t.handled)
	}
	if msgType == kernel.MsgCommOpen {
		t.open[id] = owner
	}
	msgID = want
	if _, used := t.parents[want]; used || !validCommID(want) {
		msgID = newSessionID()
	}
	t.seq++
	t.remember(msgID, sentMsg{header: parent, comm: true, seq: t.seq})
	return msgID, func(sent bool) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.conn != c {
			return
		}
		switch {
		case !sent && msgType == kernel.MsgCommOpen:
			if t.open[id] == owner {
				delete(t.open, id)
			}
		case sent && msgType == kernel.MsgCommClose:
			delete(t.open, id)
		}
	}, nil
}

// remember keeps what the session knows of message msgID. t.mu is held.
func (t *comms) remember(msgID string, m sentMsg) {
	if old, ok := t.parents[msgID]; ok { // an id used again: the newest, in the old one's place
		t.parentBytes += len(m.header) - len(old.header)
		t.parents[msgID] = m
		return
	}
	for len(t.order) > 0 && (len(t.order) >= maxCommParents || t.parentBytes+len(m.header) > maxCommParentBytes) {
		old := t.order[0]
		t.order = t.order[1:]
		t.parentBytes -= len(t.parents[old].header)
		delete(t.parents, old)
	}
	t.parents[msgID] = m
	t.order = append(t.order, msgID)
	t.parentBytes += len(m.header)
}

// rememberParent keeps parent (when set) as the header a client sees as
// the parent of what kernel c sends while it handles message msgID (an
// execution's, whose id is its msg_id).
func (t *comms) rememberParent(c KernelConn, msgID string, parent json.RawMessage) {
	if len(parent) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == c {
		t.remember(msgID, sentMsg{header: parent})
	}
}

// sent returns what the session remembers of message msgID: the header
// its sender gave (nil: none), and whether it is a comm message SendComm
// sent.
func (t *comms) sent(msgID string) sentMsg {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.parents[msgID]
}

// mark returns the number of the last comm message claimed on c, for
// handledThrough once a message sent after it is answered.
func (t *comms) mark() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seq
}

// handledThrough records that kernel c has handled every comm message up
// to number n (it handles shell messages in order).
func (t *comms) handledThrough(c KernelConn, n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == c && n > t.handled {
		t.handled = min(n, t.seq)
	}
}

// ownedBy returns the ids of the open comms owner opened.
func (t *comms) ownedBy(owner string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for id, o := range t.open {
		if o == owner {
			ids = append(ids, id)
		}
	}
	return ids
}

// has reports whether comm id is open.
func (t *comms) has(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.open[id]
	return ok
}

// count returns how many comms are open (for tests and metrics).
func (t *comms) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

func validCommID(id string) bool {
	return id != "" && len(id) <= MaxCommIDBytes && printableString(id)
}

// printableString reports whether s is UTF-8 without control characters.
func printableString(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// commContent is what the session reads of a client's comm message.
type commContent struct {
	CommID     *string         `json:"comm_id"`
	TargetName *string         `json:"target_name"`
	Data       json.RawMessage `json:"data"`
}

// Comms is the comm door of one kernel: clients' comm messages to it,
// checked against its table of open comms (ownership, Config's MaxComms,
// CommRate, MaxCommBytes) and sent beside its queue, and comm_info. Safe
// for concurrent use; a Kernel's Comms returns it.
type Comms struct{ k *Kernel }

// Comms returns the kernel's comm door.
func (s *Kernel) Comms() *Comms { return &Comms{k: s} }

// checkComm validates a client's comm message and returns its comm id.
func (cm *Comms) checkComm(owner string, parent json.RawMessage, msgType string, content, metadata json.RawMessage, buffers [][]byte) (string, error) {
	switch msgType {
	case kernel.MsgCommOpen, kernel.MsgCommMsg, kernel.MsgCommClose:
	default:
		return "", commErr(ErrBadComm, "msg_type must be comm_open, comm_msg or comm_close")
	}
	if owner == "" || len(owner) > MaxOwnerBytes {
		return "", commErr(ErrBadComm, "a comm message needs an owner of 1..%d bytes", MaxOwnerBytes)
	}
	if len(parent) > MaxParentBytes || (len(parent) > 0 && !jsonObject(parent)) {
		return "", commErr(ErrBadComm, "the parent header must be a JSON object of at most %d bytes", MaxParentBytes)
	}
	size := len(content) + len(metadata)
	for _, b := range buffers {
		size += len(b)
	}
	if size > cm.k.cfg.MaxCommBytes {
		return "", commErr(ErrBadComm, "comm message of %d bytes exceeds %d", size, cm.k.cfg.MaxCommBytes)
	}
	if len(buffers) > MaxCommBuffers {
		return "", commErr(ErrBadComm, "comm message with %d buffers; at most %d", len(buffers), MaxCommBuffers)
	}
	if len(metadata) > 0 && !jsonObject(metadata) {
		return "", commErr(ErrBadComm, "metadata must be a JSON object")
	}
	var cc commContent
	if !jsonObject(content) || json.Unmarshal(content, &cc) != nil {
		return "", commErr(ErrBadComm, "content must be a JSON object with a comm_id")
	}
	if cc.CommID == nil || !validCommID(*cc.CommID) {
		return "", commErr(ErrBadComm, "content.comm_id must be a string of 1..%d printable bytes", MaxCommIDBytes)
	}
	if msgType == kernel.MsgCommOpen {
		if cc.TargetName == nil || *cc.TargetName == "" || len(*cc.TargetName) > MaxCommTargetBytes || !printableString(*cc.TargetName) {
			return "", commErr(ErrBadComm, "comm_open needs content.target_name, a string of 1..%d printable bytes", MaxCommTargetBytes)
		}
	}
	if len(cc.Data) > 0 && string(cc.Data) != "null" && !jsonObject(cc.Data) {
		return "", commErr(ErrBadComm, "content.data must be a JSON object")
	}
	return *cc.CommID, nil
}

// SendComm sends a client's comm message (msgType comm_open, comm_msg or
// comm_close) to the kernel on shell, beside the execution queue: the
// kernel handles it between cells, or at once when the comm's handler
// runs in a thread. owner identifies the client (one per connection,
// chosen by the caller, never shown to a client) for the ownership rules
// above. content is a JSON object with a comm_id (comm_open: and a
// target_name); metadata a JSON object or nil; buffers go as the
// message's binary buffers. It returns the msg id of the message sent:
// the ParentID of the side messages the kernel sends while handling it.
// It thaws a kernel frozen while idle, records activity, and does not
// wait for the kernel. Errors: a *CommError (ErrBadComm, ErrCommNotOwned,
// ErrCommLimit, ErrCommRate), ErrPaused, ErrKernelGone. Safe for
// concurrent use.
func (cm *Comms) SendComm(owner, msgType string, content, metadata json.RawMessage, buffers [][]byte) (string, error) {
	return cm.sendComm(owner, "", nil, msgType, content, metadata, buffers)
}

// SendCommID is SendComm with the msg_id the client chose for its message
// (a native WebSocket client's frame id): the message goes to the kernel
// with it, so that the client knows the parent of what the kernel sends
// while handling it before the kernel can send anything (as a Jupyter
// client knows the msg_id of its own messages). msgID is used when it is
// 1..MaxCommIDBytes printable bytes, not the running execution's id, and
// no message the session remembers sending (a comm message of any client,
// an execution of the Jupyter face) has it; else the message gets a new
// one. It returns the msg_id used.
func (cm *Comms) SendCommID(owner, msgID, msgType string, content, metadata json.RawMessage, buffers [][]byte) (string, error) {
	if running, _, ok := cm.k.Running(); ok && running == msgID {
		msgID = "" // the execution's output would take the handler's
	}
	return cm.sendComm(owner, msgID, nil, msgType, content, metadata, buffers)
}

// SendCommParent is SendComm with the header the client gave its message
// (a JSON object, at most MaxParentBytes; nil for none): the side
// messages the kernel sends while handling it carry it as their Parent,
// so that a Jupyter client matches them to its message.
func (cm *Comms) SendCommParent(owner string, parent json.RawMessage, msgType string, content, metadata json.RawMessage, buffers [][]byte) (string, error) {
	return cm.sendComm(owner, "", parent, msgType, content, metadata, buffers)
}

// sendComm sends a client's comm message with msg_id want when it may
// (see comms.claim; "": a new one).
func (cm *Comms) sendComm(owner, want string, parent json.RawMessage, msgType string, content, metadata json.RawMessage, buffers [][]byte) (string, error) {
	id, err := cm.checkComm(owner, parent, msgType, content, metadata, buffers)
	if err != nil {
		return "", err
	}
	if cm.k.side.comms.limiter != nil && !cm.k.side.comms.limiter.Allow() {
		return "", commErr(ErrCommRate, "more than %d comm messages a second (bursts of %d) in this session", cm.k.cfg.CommRate, cm.k.cfg.CommBurst)
	}
	cm.k.s.Touch()
	return cm.sendClaimed(owner, want, parent, msgType, id, content, metadata, buffers)
}

// sendClaimed sends a checked comm message (of comm id) to the kernel,
// thawing a kernel frozen while idle, once comms.claim allows it
// (ownership, the backlog).
func (cm *Comms) sendClaimed(owner, want string, parent json.RawMessage, msgType, id string, content, metadata json.RawMessage, buffers [][]byte) (string, error) {
	release, err := cm.k.pause.use(cm.k.ctx) // a frozen kernel reads nothing
	if err != nil {
		return "", fmt.Errorf("sessions: %s: %w", msgType, err)
	}
	defer release()
	c := cm.k.kernelClient()
	msgID, done, err := cm.k.side.comms.claim(c, owner, msgType, id, want, parent)
	if err != nil {
		return "", err
	}
	_, err = c.SendID(kernel.Shell, msgID, msgType, content, metadata, buffers)
	done(err == nil)
	if err != nil {
		return "", fmt.Errorf("sessions: %s: %w", msgType, err)
	}
	return msgID, nil
}

// CloseComms closes the comms owner opened, once its client is gone (its
// connection ended): no other client may message them, and the kernel
// would keep them, and count them against Config.MaxComms, until it
// restarts (a reloaded notebook page opens a new widget control comm
// each time). Each gets a comm_close as if owner had sent it, beside
// the rate limit but within MaxCommBacklog: past it the rest stay open.
// It returns how many were closed and how many were left. It does not
// wait for the kernel; a session a client paused closes none. Safe for
// concurrent use.
func (cm *Comms) CloseComms(owner string) (closed, left int) {
	ids := cm.k.side.comms.ownedBy(owner)
	if len(ids) == 0 || cm.k.ctx.Err() != nil { // a closed session's kernel goes with its comms
		return 0, len(ids)
	}
	for _, id := range ids {
		content, _ := json.Marshal(map[string]any{"comm_id": id, "data": map[string]any{}}) // a comm id is a valid string
		if _, err := cm.sendClaimed(owner, "", nil, kernel.MsgCommClose, id, content, nil, nil); err != nil {
			break
		}
		closed++
	}
	if left = len(ids) - closed; left > 0 {
		cm.k.log.Info().Int("closed", closed).Int("left", left).Msg("a gone client's comms left open (the kernel's backlog is full, or the session is paused)")
	}
	return closed, left
}

// maxCommInfoBytes bounds the comm_info reply CommInfo reads.
const maxCommInfoBytes = kernel.MaxShellMessageBytes

// CommInfo asks the kernel which comms are open (of target targetName; ""
// for all), bypassing the execution queue like KernelRequest (a busy
// kernel answers when its cell ends; the wait is bounded by ctx and
// 30 s). It returns at most Config.MaxComms of them. The comms listed
// that the session did not know of become every client's (a gateway
// that restarted learns its kernel's widgets so). Safe for concurrent
// use.
func (cm *Comms) CommInfo(ctx context.Context, targetName string) (map[string]CommTarget, error) {
	if len(targetName) > MaxCommTargetBytes || !printableString(targetName) {
		return nil, commErr(ErrBadComm, "target_name must be at most %d printable bytes", MaxCommTargetBytes)
	}
	content := json.RawMessage("{}")
	if targetName != "" {
		content, _ = json.Marshal(map[string]string{"target_name": targetName})
	}
	c := cm.k.kernelClient()
	rep, err := cm.k.direct.request(ctx, kernel.Shell, "comm_info_request", content)
	if err != nil {
		return nil, err
	}
	if len(rep.Content) > maxCommInfoBytes {
		return nil, fmt.Errorf("sessions: comm_info_reply of %d bytes: %w", len(rep.Content), kernel.ErrMalformed)
	}
	var r struct {
		Comms map[string]json.RawMessage `json:"comms"`
	}
	if err := json.Unmarshal(rep.Content, &r); err != nil {
		return nil, fmt.Errorf("sessions: comm_info_reply: %w: %w", kernel.ErrMalformed, err)
	}
	out := make(map[string]CommTarget, min(len(r.Comms), cm.k.cfg.MaxComms))
	ids := make([]string, 0, len(out))
	for id, raw := range r.Comms {
		if len(out) == cm.k.cfg.MaxComms {
			break
		}
		var t CommTarget
		if !validCommID(id) || json.Unmarshal(raw, &t) != nil || len(t.TargetName) > MaxCommTargetBytes || !printableString(t.TargetName) {
			continue
		}
		out[id] = t
		ids = append(ids, id)
	}
	cm.k.side.comms.learn(c, ids)
	return out, nil
}

// OpenComms returns how many comms of the current kernel the session
// tracks.
func (cm *Comms) OpenComms() int { return cm.k.side.comms.count() }
