package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/glassroom/glassroom/kernel/kernels"
)

// kernelsUsage is the help of `glassroom kernels`.
const kernelsUsage = `usage: glassroom kernels [--root DIR | --smoke NAME | --probes]

Reads the kernel registry (kernel/kernels):
  (no flag)     each kernel, its display name and whether this host has it
  --root DIR    the kernels the root file system at DIR has, comma-separated,
                python3 first (images/python/customize.sh labels the image so)
  --smoke NAME  the command that checks NAME's interpreter in an image, one
                argument per line (images/python/build.sh runs it)
  --probes      every kernel's probe and smoke command as JSON (build.sh
                hashes it: a change rebuilds the image)
`

// kernelsCommand runs `glassroom kernels ARGS`, writing to stdout.
func kernelsCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kernels", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, kernelsUsage) }
	root := fs.String("root", "", "a root file system")
	smoke := fs.String("smoke", "", "a kernel's name")
	probes := fs.Bool("probes", false, "the probes as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("kernels: unexpected argument %q", fs.Arg(0))
	}
	switch {
	case *root != "":
		var names []string
		for _, k := range kernels.All() {
			if k.Probe.Found(*root) {
				names = append(names, k.Name)
			}
		}
		_, err := fmt.Fprintln(stdout, strings.Join(names, ","))
		return err
	case *smoke != "":
		k, ok := kernels.Lookup(*smoke)
		if !ok {
			return fmt.Errorf("kernels: unknown kernel %q", *smoke)
		}
		for _, a := range k.Smoke {
			if strings.ContainsAny(a, "\n\x00") {
				return errors.New("kernels: a smoke argument holds a newline") // the registry's test forbids it
			}
		}
		_, err := fmt.Fprintln(stdout, strings.Join(k.Smoke, "\n"))
		return err
	case *probes:
		type probe struct {
			Name  string        `json:"name"`
			Probe kernels.Probe `json:"probe"`
			Smoke []string      `json:"smoke"`
		}
		var out []probe
		for _, k := range kernels.All() {
			out = append(out, probe{k.Name, k.Probe, k.Smoke})
		}
		b, err := json.Marshal(out)
		if err != nil {
			return fmt.Errorf("kernels: %w", err)
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	for _, k := range kernels.All() {
		have := "not installed"
		if k.Name == kernels.Default || k.Probe.Found("/") {
			have = "installed"
		}
		if _, err := fmt.Fprintf(stdout, "%-12s %-20s %s\n", k.Name, k.DisplayName, have); err != nil {
			return err
		}
	}
	return nil
}
