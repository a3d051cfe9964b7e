package k8s

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"syscall"
)

// Fencing: a gateway that lost its Lease (partitioned, paused, its clock
// skewed) must not talk to a kernel once another gateway has adopted its
// session. Each owner of a pod has an epoch: 1 for the gateway that made
// it, one more for each adoption (AnnotationEpoch, raised in the same
// optimistic update as the owner's label, so two adopters never share
// one). The gateway sends it with every request to the pod's agent
// (EpochHeader); the agent keeps the highest it has seen (in the control
// directory, so an agent restart keeps it too) and refuses a lower one
// with 409, and when it sees a higher one it first closes every tunnel
// opened under a lower one. So the old owner's channels, commands and
// contexts end the moment the new owner first reaches the agent, and
// nothing it sends afterwards reaches a kernel. Its driver then reports
// the sandbox fenced (sandbox.Fenceable): the session layer lets it go
// without deleting anything.
const (
	// EpochHeader carries the gateway's epoch for the pod.
	EpochHeader = "Glassroom-Epoch"
	// FencedHeader marks the agent's refusal of an epoch (its 409): the
	// workspace's own 409s (a path that exists, or is a directory) are
	// no fence.
	FencedHeader = "Glassroom-Fenced"
	// AnnotationEpoch is the pod's current owner's epoch.
	AnnotationEpoch = "glassroom.io/epoch"
	// FenceFile is where the agent keeps the highest epoch it has seen.
	FenceFile = controlDir + "/fence.json"
)

// errFenced: the pod's agent refused this gateway's epoch: another
// gateway adopted the session.
var errFenced = errors.New("k8s: fenced: another gateway adopted this session")

// fenceState is what FenceFile holds.
type fenceState struct {
	Epoch int64 `json:"epoch"`
}

// readFence reads the agent's fence file; 0 when there is none.
func readFence(path string) int64 {
	if path == "" {
		return 0
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	var st fenceState
	if json.NewDecoder(io.LimitReader(f, 4096)).Decode(&st) != nil || st.Epoch < 0 {
		return 0
	}
	return st.Epoch
}

// requestEpoch is the epoch a request carries (0 without one: a gateway
// from before fencing).
func requestEpoch(r *http.Request) int64 {
	e, err := strconv.ParseInt(r.Header.Get(EpochHeader), 10, 64)
	if err != nil || e < 0 {
		return 0
	}
	return e
}

// admit reports whether a request of epoch e may go on: not when a
// higher epoch was seen. A higher e than any seen is recorded (and
// persisted) and every tunnel of a lower one is closed first.
func (a *agent) admit(e int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case e < a.epoch:
		return false
	case e == a.epoch:
		return true
	}
	a.epoch = e
	if a.cfg.FenceFile != "" {
		if err := writeFileAtomic(a.cfg.FenceFile, fenceState{Epoch: e}); err != nil {
			a.log.Warn().Err(err).Msg("cannot persist the fence: an agent restart would forget it")
		}
	}
	for c, ce := range a.tunnels {
		if ce < e {
			c.Close()
		}
	}
	return true
}

// refuseFenced answers a request of an epoch that is no longer the
// pod's owner's.
func refuseFenced(w http.ResponseWriter) {
	w.Header().Set(FencedHeader, "1")
	http.Error(w, errFenced.Error(), http.StatusConflict)
}

// isFenced reports whether an answer of the agent is its refusal of this
// gateway's epoch.
func isFenced(resp *http.Response) bool {
	return resp.StatusCode == http.StatusConflict && resp.Header.Get(FencedHeader) != ""
}

// stale reports whether a higher epoch than e has been seen.
func (a *agent) stale(e int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return e < a.epoch
}

// fence is the agent's outer handler: an authorized request of an epoch
// lower than the highest seen is refused (409); the health check and
// unauthorized requests (which the server refuses itself) pass.
func (a *agent) fence(authorized func(*http.Request) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if authorized(r) && !a.admit(requestEpoch(r)) {
			refuseFenced(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}
