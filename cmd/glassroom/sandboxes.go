package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/docker"
	"github.com/rs/zerolog"
)

const sandboxesUsage = `usage: glassroom sandboxes [flags]

Lists the glassroom sandboxes of this host's Docker engine, whichever
gateway made them: container, session, instance, state dir, state, age,
deadline (when the sandbox ends itself unless a gateway holds it) and
owner: a live gateway (one holding the state dir's lock) or none. With
--remove it removes those no live gateway owns, containers and session
directories, never a live gateway's: it takes each free state dir's lock
meanwhile, so no gateway starts on it. Run it where the gateways' state
dirs are (the host): a state dir it cannot find counts as gone. Do not
run --remove while a gateway restarts (--on-shutdown keep): between the
two, the sandboxes the next one would adopt have no owner.

`

// sandboxesOptions are the flags of glassroom sandboxes.
type sandboxesOptions struct {
	runtime   string
	remove    bool
	stateDirs stringList
	instance  string
	timeout   time.Duration
}

func parseSandboxes(args []string, stderr io.Writer) (*sandboxesOptions, error) {
	o := &sandboxesOptions{}
	fs := flag.NewFlagSet("sandboxes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, sandboxesUsage); fs.PrintDefaults() }
	fs.StringVar(&o.runtime, "runtime", "docker", "runtime whose sandboxes to list: docker (local kernels end with their gateway; k8s pods are adopted or deleted by the other replicas)")
	fs.BoolVar(&o.remove, "remove", false, "remove the sandboxes no live gateway owns")
	fs.Var(&o.stateDirs, "state-dir", "only the sandboxes of this state dir (repeatable)")
	fs.StringVar(&o.instance, "instance", "", "only the sandboxes of this gateway instance")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound on the whole command")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("sandboxes: unexpected arguments: %v", fs.Args())
	}
	switch o.runtime {
	case "docker":
	case "local":
		return nil, errors.New("sandboxes: --runtime local: a local kernel is its gateway's child and ends with it; there is nothing to list")
	case "k8s":
		return nil, errors.New("sandboxes: --runtime k8s: kernel pods are adopted by another replica or deleted by its reconcile after --orphan-grace; list them with kubectl get pods -l glassroom.io/session")
	default:
		return nil, fmt.Errorf("sandboxes: --runtime %q: want docker", o.runtime)
	}
	if o.timeout <= 0 {
		return nil, errors.New("sandboxes: --timeout must be positive")
	}
	return o, nil
}

// runSandboxes is `glassroom sandboxes`.
func runSandboxes(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseSandboxes(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	h, err := docker.NewHost(ctx, docker.HostConfig{StateDirs: o.stateDirs, Instance: o.instance}, log)
	if err != nil {
		return fmt.Errorf("sandboxes: %w", err)
	}
	defer func() { _ = h.Close() }()
	var removed []docker.HostSandbox
	var rerr error
	if o.remove {
		removed, rerr = h.RemoveUnowned(ctx)
	}
	list, err := h.Sandboxes(ctx)
	if err != nil {
		return fmt.Errorf("sandboxes: %w", errors.Join(rerr, err))
	}
	now := time.Now()
	if err := printSandboxes(stdout, list, now); err != nil {
		return err
	}
	if o.remove {
		fmt.Fprintf(stdout, "\nremoved %d sandboxes no gateway owned:\n", len(removed))
		for _, s := range removed {
			fmt.Fprintf(stdout, "  %s (session %s, state dir %s: %s)\n", s.Container, s.Session, s.StateDir, s.Owner.Gone)
		}
	}
	if rerr != nil {
		return fmt.Errorf("sandboxes: remove: %w", rerr)
	}
	return nil
}

// printSandboxes writes list as a table.
func printSandboxes(w io.Writer, list []docker.HostSandbox, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tSESSION\tINSTANCE\tSTATE DIR\tSTATE\tAGE\tDEADLINE\tOWNER")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Container, orDash(s.Session), orDash(s.Instance), orDash(s.StateDir),
			s.State, age(now.Sub(s.Created)), deadlineText(s, now), s.Owner)
	}
	if len(list) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age is d, rounded to what a reader wants (seconds under a minute,
// minutes under a day, then hours).
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 24*time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Hour).String()
}

// deadlineText says when s ends itself.
func deadlineText(s docker.HostSandbox, now time.Time) string {
	switch {
	case s.Deadline.IsZero():
		return s.DeadlineNote
	case s.Deadline.After(now):
		return "in " + age(s.Deadline.Sub(now)) + " (" + s.Deadline.UTC().Format(time.RFC3339) + ")"
	}
	return "passed " + age(now.Sub(s.Deadline)) + " ago (" + s.Deadline.UTC().Format(time.RFC3339) + ")"
}
