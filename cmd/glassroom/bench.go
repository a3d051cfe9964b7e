package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/glassroom/glassroom/loadgen"
)

const benchUsage = `usage: glassroom bench [flags] TARGET...

Runs the load harness: --sessions kernels per target, each executing
--cell back to back for --duration, and prints exec/s and latency
percentiles side by side. A TARGET is
  glassroom=URL        glassroom's native API (key: --api-key or GLASSROOM_API_KEY)
  glassroom-api=URL    glassroom's Jupyter Server kernels API (/api)
  jupyter=URL          a Jupyter server's kernels API (token: --jupyter-token)
--sessions takes a comma-separated list to run each target at several sizes.
`

type benchOptions struct {
	sessions     []int
	duration     time.Duration
	cell         string
	apiKey       string
	jupyterToken string
	targets      []loadgen.Target
}

func parseBench(args, env []string, stderr io.Writer) (*benchOptions, error) {
	o := &benchOptions{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	envMap := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envMap[k] = v
		}
	}
	sessions := fs.String("sessions", "10", "kernels per run (a comma-separated list runs several)")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "measured time per run")
	fs.StringVar(&o.cell, "cell", "x = 1\nx + 1", "the code each kernel runs")
	fs.StringVar(&o.apiKey, "api-key", envMap["GLASSROOM_API_KEY"], "glassroom API key (env GLASSROOM_API_KEY)")
	fs.StringVar(&o.jupyterToken, "jupyter-token", envMap["JUPYTER_TOKEN"], "Jupyter server token (env JUPYTER_TOKEN)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(*sessions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--sessions: %q is not a positive number", s)
		}
		o.sessions = append(o.sessions, n)
	}
	for _, a := range fs.Args() {
		kind, url, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(url, "http") {
			return nil, fmt.Errorf("target %q: want KIND=http://host:port", a)
		}
		url = strings.TrimRight(url, "/")
		switch kind {
		case "glassroom":
			o.targets = append(o.targets, loadgen.Native{BaseURL: url, Key: o.apiKey})
		case "glassroom-api":
			o.targets = append(o.targets, loadgen.Jupyter{BaseURL: url, Token: o.apiKey, Label: "glassroom /api " + url})
		case "jupyter":
			o.targets = append(o.targets, loadgen.Jupyter{BaseURL: url, Token: o.jupyterToken})
		default:
			return nil, fmt.Errorf("target %q: kind must be glassroom, glassroom-api or jupyter", a)
		}
	}
	if len(o.targets) == 0 {
		fs.Usage()
		return nil, errors.New("no target")
	}
	return o, nil
}

// runBench runs every target at every size and prints one table.
func runBench(ctx context.Context, args, env []string, stdout io.Writer) error {
	o, err := parseBench(args, env, stdout)
	if err != nil {
		return err
	}
	var results []loadgen.Result
	for _, n := range o.sessions {
		for _, t := range o.targets {
			fmt.Fprintf(stdout, "bench: %s, %d sessions, %v ...\n", t.Name(), n, o.duration)
			r, err := loadgen.Run(ctx, t, loadgen.Config{Sessions: n, Duration: o.duration, Code: o.cell})
			if err != nil {
				return fmt.Errorf("bench %s: %w", t.Name(), err)
			}
			results = append(results, r)
		}
	}
	fmt.Fprintln(stdout)
	return loadgen.WriteTable(stdout, results)
}
