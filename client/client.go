package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Config configures a Client. Zero fields take defaults.
type Config struct {
	// BaseURL is the gateway's address, e.g. http://127.0.0.1:8888. Required.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Required.
	APIKey string
	// HTTPClient does the REST calls (default: a client without an overall
	// timeout, since executions last as long as the gateway allows; bound
	// calls with their context).
	HTTPClient *http.Client
	// Dialer opens WebSockets (default: websocket.DefaultDialer with a 30 s
	// handshake timeout).
	Dialer *websocket.Dialer
	// MaxResponseBytes bounds one JSON response (default 64 MiB; the largest
	// execution the gateway keeps is about 11 MiB).
	MaxResponseBytes int64
	// MaxFrameBytes bounds one WebSocket frame (default 32 MiB).
	MaxFrameBytes int64
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("client: config: BaseURL %q must be an http(s) URL with a host", c.BaseURL)
	}
	if c.APIKey == "" {
		return errors.New("client: config: APIKey is required")
	}
	if strings.ContainsAny(c.APIKey, "\r\n") {
		return errors.New("client: config: APIKey contains a line break")
	}
	if c.MaxResponseBytes < 0 || c.MaxFrameBytes < 0 {
		return errors.New("client: config: negative limit")
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Dialer == nil {
		d := *websocket.DefaultDialer
		d.HandshakeTimeout = 30 * time.Second
		c.Dialer = &d
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = 64 << 20
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = 32 << 20
	}
	return c
}

// Client talks to one gateway with one API key. It is safe for concurrent
// use and holds no resources beyond its http.Client's idle connections.
type Client struct {
	cfg Config
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{cfg: cfg.withDefaults()}, nil
}

// BaseURL returns the gateway address the client talks to.
func (c *Client) BaseURL() string { return c.cfg.BaseURL }

// request is one REST call.
type request struct {
	method string
	path   string // already escaped
	query  url.Values
	body   io.Reader
	ctype  string
	json   any   // marshalled as the body when set
	size   int64 // body length when sized is set (lets the gateway refuse an oversized upload early)
	sized  bool
}

func (c *Client) newRequest(ctx context.Context, r request) (*http.Request, error) {
	body := r.body
	ctype := r.ctype
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", r.method, r.path, err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	u := c.cfg.BaseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	if r.sized {
		req.ContentLength = r.size
		if r.size == 0 {
			req.Body = http.NoBody
		}
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return req, nil
}

// send does r and returns the response if its status is one of ok;
// otherwise it returns the gateway's error as *APIError. The caller
// closes the body of a returned response.
func (c *Client) send(ctx context.Context, r request, ok ...int) (*http.Response, error) {
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			return resp, nil
		}
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

// do does r and decodes a JSON answer into out (when non-nil).
func (c *Client) do(ctx context.Context, r request, out any, ok ...int) error {
	resp, err := c.send(ctx, r, ok...)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("client: %s %s: read response: %w", r.method, r.path, err)
	}
	if int64(len(data)) > c.cfg.MaxResponseBytes {
		return fmt.Errorf("%w: %s %s: response over %d bytes", ErrProtocol, r.method, r.path, c.cfg.MaxResponseBytes)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrProtocol, r.method, r.path, err)
	}
	return nil
}

// decodeError turns an error response into *APIError. Bodies that are not
// the gateway's error JSON are quoted (bounded) in the message.
func decodeError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error != nil {
		return &APIError{Status: resp.StatusCode, Code: body.Error.Code, Message: body.Error.Message}
	}
	msg := strings.TrimSpace(string(data))
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &APIError{Status: resp.StatusCode, Message: msg}
}

// Do sends a raw request to path (e.g. "/v1/sessions") with the client's
// key and returns the response whatever its status: for routes this
// package does not wrap, or to test the API itself. The caller closes the
// body.
func (c *Client) Do(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := c.newRequest(ctx, request{method: method, path: path, body: body, ctype: contentType})
	if err != nil {
		return nil, err
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	return resp, nil
}

// Health calls GET /healthz (no key needed, but it is sent).
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.do(ctx, request{method: http.MethodGet, path: "/healthz"}, &h, http.StatusOK); err != nil {
		return nil, err
	}
	return &h, nil
}

func sessionPath(id string, rest ...string) string {
	p := "/v1/sessions/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// filePath escapes a workspace path segment by segment, so "/" stays a
// separator and everything else (spaces, %, ?, #) is sent literally.
func filePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
