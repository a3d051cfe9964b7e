package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/glassroom/glassroom/gateway/internal/urlsign"
)

// Config configures the HTTP server. Zero fields take defaults.
type Config struct {
	// APIKeys are the accepted keys; each is a tenant. Required.
	APIKeys []string
	// MaxBodyBytes bounds JSON request bodies (default 2 MiB).
	MaxBodyBytes int64
	// MaxUploadBytes bounds one file upload (default 100 MiB).
	MaxUploadBytes int64
	// MaxEditBytes bounds the file a text edit (PATCH on a file) reads
	// and writes (default 4 MiB); the edit's body is bounded by
	// MaxBodyBytes.
	MaxEditBytes int64
	// WSLargeFrameBudget is how many bytes of large WebSocket frames
	// (a comm message above the code limit: an ipywidgets FileUpload, a
	// big array for a widget) all connections may hold at once (default
	// 64 MiB; one tenant, half of it). Past it, such frames wait, then
	// their connections are closed (1013). At least twice the frame of
	// the largest comm message (sessions.Config.MaxCommBytes).
	WSLargeFrameBudget int64
	// AllowedOrigins lists extra browser origins allowed to open WebSockets
	// (same-origin is always allowed; non-browser clients send no Origin).
	AllowedOrigins []string
	// WSPingInterval is how often idle WebSockets are pinged (default 30 s).
	WSPingInterval time.Duration
	// ShutdownTimeout bounds graceful shutdown of HTTP connections (default 10 s).
	ShutdownTimeout time.Duration
	// Metrics, when set, is served at GET /metrics to requests bearing
	// MetricsToken (its own token, not an API key).
	Metrics      http.Handler
	MetricsToken string
	// MCP, when set, builds the handler served at /mcp (behind the API
	// keys) over the server's in-process transport: the composition root
	// gives it, so that the gateway imports neither the MCP server nor the
	// Go client it uses.
	MCP func(inProcess http.RoundTripper) (http.Handler, error)
	// URLSigningKey seals the tokens of signed file URLs and previews (at
	// least 32 bytes of secret; replicas must share it). Empty: a random
	// key of this process, so that its URLs end with it and no other
	// replica honours them.
	URLSigningKey []byte
	// PreviewBase is the preview origin's scheme and domain, with its port
	// when not the scheme's ("http://localhost:8890"): a preview of port
	// P of session S is served at {P}-{S}.{domain} by ServePreviews.
	// Empty: no previews. It must be another site than the gateway's own
	// (a page of the sandbox may set cookies for its whole domain).
	PreviewBase string
	// Volumes keeps tenants' named volumes (/v1/volumes); nil: the routes
	// answer 501.
	Volumes VolumeStore
	// Snapshots captures sessions and starts sessions from captures, and
	// SnapshotStore keeps them (/v1/snapshots, forks); nil: the routes
	// answer 501. Both or neither.
	Snapshots     SnapshotService
	SnapshotStore SnapshotStore
	// Instance names this replica in the requests it forwards to the
	// replica serving a session (ForwardedHeader); default "gateway".
	Instance string
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 2 << 20
	}
	if c.MaxUploadBytes == 0 {
		c.MaxUploadBytes = 100 << 20
	}
	if c.MaxEditBytes == 0 {
		c.MaxEditBytes = 4 << 20
	}
	if c.WSLargeFrameBudget == 0 {
		c.WSLargeFrameBudget = 64 << 20
	}
	if c.WSPingInterval == 0 {
		c.WSPingInterval = 30 * time.Second
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.Instance == "" {
		c.Instance = "gateway"
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	if len(c.APIKeys) == 0 {
		return errors.New("gateway: config: at least one API key is required")
	}
	for _, k := range c.APIKeys {
		if len(k) < 16 {
			return errors.New("gateway: config: API keys must be at least 16 characters")
		}
	}
	if c.PreviewBase != "" {
		u, err := url.Parse(c.PreviewBase)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("gateway: config: the preview base %q must be http(s)://domain[:port]", c.PreviewBase)
		}
	}
	if len(c.URLSigningKey) > 0 && len(c.URLSigningKey) < urlsign.MinKeyBytes {
		return fmt.Errorf("gateway: config: the URL signing key must be at least %d bytes", urlsign.MinKeyBytes)
	}
	if (c.Snapshots == nil) != (c.SnapshotStore == nil) {
		return errors.New("gateway: config: Snapshots and SnapshotStore go together")
	}
	if c.MaxBodyBytes < 0 || c.MaxUploadBytes < 0 || c.MaxEditBytes < 0 || c.WSLargeFrameBudget < 0 || c.WSPingInterval < 0 || c.ShutdownTimeout < 0 {
		return errors.New("gateway: config: negative limit")
	}
	return nil
}

// DefaultConfig returns the configuration with every default filled in;
// command-line flags start from it.
func DefaultConfig() Config { return Config{}.withDefaults() }
