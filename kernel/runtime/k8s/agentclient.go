package k8s

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// agentClient is the gateway's side of one pod agent's kernel control.
// The pod is hostile: answers are bounded and their reasons sanitized.
type agentClient struct {
	base  string // http://<pod ip>:<port>
	token string
	epoch int64 // this gateway's for the pod (fence.go)
	http  *http.Client
}

// newAgentHTTP returns the client of every agent call over t. It never
// follows a redirect: an agent has no reason to send one, and a pod's
// code that took the agent's port could otherwise point the gateway's
// requests (a PUT's body included) at any address it reaches. A redirect
// answer is an error like any other non-2xx.
func newAgentHTTP(t http.RoundTripper) *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// newAgentTransport returns the transport of one pod's agent calls: TLS
// with that session's pinned certificate (conf).
func newAgentTransport(conf *tls.Config) *http.Transport {
	return &http.Transport{
		TLSClientConfig:     conf,
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

func (a *agentClient) do(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set(EpochHeader, strconv.FormatInt(a.epoch, 10))
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("k8s: agent: %w", err)
	}
	if isFenced(resp) {
		resp.Body.Close()
		return nil, errFenced
	}
	if resp.StatusCode/100 != 2 {
		resp.Body.Close()
		return nil, fmt.Errorf("k8s: agent: %s %s: HTTP %d", req.Method, req.URL.Path, resp.StatusCode)
	}
	return resp, nil
}

// command asks the supervisor to run or stop a generation.
func (a *agentClient) command(ctx context.Context, cmd KernelCommand) error {
	b, _ := json.Marshal(cmd)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, a.base+kernelPath, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("k8s: agent: %w", err)
	}
	resp, err := a.do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// wait long-polls the supervisor's status until it meets until for gen
// (see met) or wait passes; it returns the last status either way.
func (a *agentClient) wait(ctx context.Context, gen int64, until string, wait time.Duration) (KernelStatus, error) {
	q := url.Values{"gen": {strconv.FormatInt(gen, 10)}, "until": {until}, "wait_ms": {strconv.FormatInt(wait.Milliseconds(), 10)}}
	cctx, cancel := context.WithTimeout(ctx, wait+5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, a.base+kernelPath+"?"+q.Encode(), nil)
	if err != nil {
		return KernelStatus{}, fmt.Errorf("k8s: agent: %w", err)
	}
	resp, err := a.do(req)
	if err != nil {
		return KernelStatus{}, err
	}
	defer resp.Body.Close()
	var st KernelStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&st); err != nil {
		return KernelStatus{}, fmt.Errorf("k8s: agent: bad status: %w", err)
	}
	st.State, st.Reason = sanitize(st.State, 16), sanitize(st.Reason, 200)
	return st, nil
}
