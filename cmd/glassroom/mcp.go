package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/app"
	"github.com/glassroom/glassroom/client"
	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/glassroom/glassroom/kernel/runtime/local"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/glassroom/glassroom/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"
)

const mcpUsage = `usage: glassroom mcp [--url URL] [--api-key KEY]
       glassroom mcp --embedded [-- serve flags]

Serves glassroom's MCP tools (execute_python, execute_code,
list_languages, upload_file, read_file, list_files, edit_file,
restart_session, close_session) over stdio, for desktop AI clients. It
talks to the gateway at --url (GLASSROOM_URL, default
http://127.0.0.1:8888) with --api-key (GLASSROOM_API_KEY), or with
--embedded runs a gateway inside this process (no port is opened),
configured by the serve flags after "--" and their GLASSROOM_* twins;
its state directory is its own (<the runtime's default>-mcp-<n>, the
first no other gateway holds) unless --state-dir says otherwise.
Stdout carries the protocol; logs go to stderr. When the client
disconnects, the sessions this server started are closed.
`

type mcpOptions struct {
	url, apiKey string
	embedded    bool
	logLevel    string
	maxChars    int
	serveArgs   []string
}

func parseMCP(args, env []string, stderr io.Writer) (*mcpOptions, error) {
	o := &mcpOptions{}
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, mcpUsage); fs.PrintDefaults() }
	envMap := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	fs.StringVar(&o.url, "url", envMap["GLASSROOM_URL"], "gateway URL (env GLASSROOM_URL; default http://127.0.0.1:8888)")
	fs.StringVar(&o.apiKey, "api-key", envMap["GLASSROOM_API_KEY"], "API key of the gateway (env GLASSROOM_API_KEY)")
	fs.BoolVar(&o.embedded, "embedded", false, "run a gateway inside this process (local runtime unless serve flags say otherwise)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level (logs go to stderr)")
	fs.IntVar(&o.maxChars, "max-output-chars", 20000, "characters of text one tool result may return")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.serveArgs = fs.Args()
	if o.embedded {
		if o.url != "" && envMap["GLASSROOM_URL"] != o.url {
			return nil, errors.New("mcp: --embedded and --url exclude each other")
		}
		o.url = ""
		return o, nil
	}
	if len(o.serveArgs) > 0 {
		return nil, fmt.Errorf("mcp: unexpected arguments %v (serve flags need --embedded)", o.serveArgs)
	}
	if o.url == "" {
		o.url = "http://127.0.0.1:8888"
	}
	if o.apiKey == "" {
		fmt.Fprint(stderr, mcpUsage)
		return nil, errors.New("mcp: an API key is required (--api-key or GLASSROOM_API_KEY), or use --embedded")
	}
	return o, nil
}

// runMCP serves the MCP tools over stdin/stdout until the client
// disconnects or ctx ends.
func runMCP(ctx context.Context, args, env []string, stdin io.Reader, stdout io.Writer) error {
	o, err := parseMCP(args, env, os.Stderr)
	if err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := zerolog.New(os.Stderr).Level(level).With().Timestamp().Str("component", "mcp").Logger()
	cfg := mcp.Config{MaxTextChars: o.maxChars}
	transport := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if o.embedded {
		return runEmbeddedMCP(ctx, o, env, cfg, transport, log)
	}
	c, err := client.New(client.Config{BaseURL: o.url, APIKey: o.apiKey})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	_, err = c.ListSessions(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("mcp: the gateway at %s is not usable: %w", o.url, err)
	}
	srv, err := mcp.New(c, cfg, log)
	if err != nil {
		return err
	}
	log.Info().Str("gateway", o.url).Msg("serving MCP over stdio")
	err = srv.Run(ctx, transport)
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := srv.CloseCreatedSessions(cctx); cerr != nil {
		log.Warn().Err(cerr).Msg("could not close every session")
	}
	return ignoreClosed(err)
}

// runEmbeddedMCP runs a gateway in this process and serves the tools over
// it through the gateway's in-process transport.
func runEmbeddedMCP(ctx context.Context, mo *mcpOptions, env []string, cfg mcp.Config, transport sdk.Transport, log zerolog.Logger) error {
	o, err := parse(append([]string{"serve"}, mo.serveArgs...), env, os.Stderr)
	if err != nil {
		return err
	}
	if len(o.apiKeys) == 0 {
		o.apiKeys = []string{newKey()}
	}
	a, err := newEmbeddedApp(ctx, o, log)
	if err != nil {
		return err
	}
	closeApp := func() error {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return a.Close(cctx, false)
	}
	c, err := a.Client(o.apiKeys[0])
	if err != nil {
		return errors.Join(err, closeApp())
	}
	srv, err := mcp.New(c, cfg, log)
	if err != nil {
		return errors.Join(err, closeApp())
	}
	log.Info().Str("runtime", a.Runtime.Name()).Str("state_dir", o.stateDir).Msg("serving MCP over stdio with an embedded gateway")
	g, gctx := errgroup.WithContext(ctx)
	sctx, stopServing := context.WithCancel(gctx)
	g.Go(func() error {
		defer stopServing()
		return ignoreClosed(srv.Run(gctx, transport))
	})
	g.Go(func() error { return a.Run(sctx, nil) })
	err = g.Wait()
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cerr := a.Close(cctx, false); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		err = nil // the client went away: a normal end
	}
	return err
}

// embeddedSlots is how many embedded gateways with default state
// directories run at once, one per directory <runtime default>-mcp-<n>.
const embeddedSlots = 32

// newEmbeddedApp assembles an embedded gateway. Unless the serve flags
// name a state directory, it takes the first of its own,
// <the runtime's default>-mcp-<n>, that no live gateway holds: never the
// directory of a `glassroom serve` (which would remove its sandboxes as
// orphans), and the one an embedded gateway that died left, so its
// leftovers are reconciled. Unless --uid-base is given, slot n's sandboxes
// run as uids of their own too, (n+1)*1024 past the runtime's default
// base, and a slot whose uids another live gateway claimed (one started
// with such a --uid-base) is passed over like a held directory. It sets
// o.stateDir (and o.uidBase) to what it took.
func newEmbeddedApp(ctx context.Context, o *options, log zerolog.Logger) (*app.App, error) {
	var base string
	var uidBase int
	switch {
	case o.stateDir != "":
	case o.runtime == "local":
		base, uidBase = local.DefaultStateDir(), local.DefaultUIDBase
	case o.runtime == "docker":
		base, uidBase = docker.DefaultStateDir, docker.DefaultUIDBase
	}
	const hint = `--state-dir DIR after "--" (glassroom mcp --embedded -- --state-dir DIR)`
	if base == "" {
		a, err := app.New(ctx, o.appConfig(), log)
		return a, withUIDHint(withFlagHint(err, hint))
	}
	explicitUIDs := o.uidBase != 0
	for n := range embeddedSlots {
		o.stateDir = base + "-mcp-" + strconv.Itoa(n)
		if o.egressDir == "" {
			o.sess.Egress.Dir = filepath.Join(o.stateDir, "egress")
		}
		if !explicitUIDs { // sandbox uids of their own too, past the serve gateway's
			o.uidBase = uidBase + (n+1)*sandbox.DefaultMaxSandboxes
		}
		a, err := app.New(ctx, o.appConfig(), log)
		var inUse *sandbox.StateDirInUseError
		var uidsInUse *sandbox.UIDRangeInUseError
		if errors.As(err, &inUse) || (!explicitUIDs && errors.As(err, &uidsInUse)) {
			continue
		}
		return a, withUIDHint(withFlagHint(err, hint))
	}
	return nil, fmt.Errorf("mcp: the %d state directories %s-mcp-0 to %s-mcp-%d, or their uids, are all in use by other gateways; give this one its own with %s", embeddedSlots, base, base, embeddedSlots-1, hint)
}

// withUIDHint says where an embedded gateway's --uid-base goes, when
// err is a refused uid range.
func withUIDHint(err error) error {
	var inUse *sandbox.UIDRangeInUseError
	if errors.As(err, &inUse) {
		return fmt.Errorf(`%w (after "--": glassroom mcp --embedded -- --uid-base N)`, err)
	}
	return err
}

// ignoreClosed treats the client closing stdin as a normal end.
func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "connection closed") {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
