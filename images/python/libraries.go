// Package python is the Go side of the kernel image's build inputs in this
// directory: the list of libraries generated code expects in the python3
// kernel (libraries.txt), which build.sh, the Dockerfile and
// scripts/install-deps.sh install and the runtimes' tests import. It holds
// no state; everything it returns is a fresh copy.
package python

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed libraries.txt
var librariesTxt string

// NotAModule is the import name of a library that is not a Python module
// (a font).
const NotAModule = "-"

// Library is one line of libraries.txt.
type Library struct {
	// Import is the name code imports (sklearn), or NotAModule.
	Import string
	// Package is the Debian package that installs it (python3-sklearn).
	Package string
}

// Libraries returns the libraries of libraries.txt, in its order. The file
// is embedded and checked by this package's tests, so it panics only if the
// build embedded a malformed file.
func Libraries() []Library {
	libs, err := ParseLibraries(librariesTxt)
	if err != nil {
		panic(err)
	}
	return libs
}

// Modules returns the import names of Libraries, leaving out what is not
// a module.
func Modules() []string {
	var out []string
	for _, l := range Libraries() {
		if l.Import != NotAModule {
			out = append(out, l.Import)
		}
	}
	return out
}

// ParseLibraries parses text in libraries.txt's format: one library a
// line, its import name then its Debian package, separated by blanks;
// '#' starts a comment. Every import name (but NotAModule) and every
// package appears once.
func ParseLibraries(text string) ([]Library, error) {
	var out []Library
	imports, pkgs := map[string]bool{}, map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case len(f) != 2:
			return nil, fmt.Errorf("libraries: line %d: want an import name and a Debian package, got %q", i+1, strings.TrimSpace(line))
		case !validImport(f[0]):
			return nil, fmt.Errorf("libraries: line %d: %q is not an import name", i+1, f[0])
		case !validPackage(f[1]):
			return nil, fmt.Errorf("libraries: line %d: %q is not a Debian package name", i+1, f[1])
		case (f[0] != NotAModule && imports[f[0]]) || pkgs[f[1]]:
			return nil, fmt.Errorf("libraries: line %d: %s %s is listed twice", i+1, f[0], f[1])
		}
		imports[f[0]], pkgs[f[1]] = true, true
		out = append(out, Library{Import: f[0], Package: f[1]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("libraries: no library listed")
	}
	return out, nil
}

const (
	lower      = "abcdefghijklmnopqrstuvwxyz"
	digits     = "0123456789"
	identChars = lower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ" + digits + "_"
)

// validImport: a dotted Python identifier (ASCII), or NotAModule.
func validImport(s string) bool {
	if s == NotAModule {
		return true
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || (part[0] >= '0' && part[0] <= '9') {
			return false
		}
		if strings.Trim(part, identChars) != "" {
			return false
		}
	}
	return true
}

// validPackage: Debian's package name rule (lower case letters, digits,
// + - and ., at least two characters, starting with a letter or digit).
func validPackage(s string) bool {
	return len(s) >= 2 && strings.IndexByte(lower+digits, s[0]) >= 0 && strings.Trim(s, lower+digits+"+-.") == ""
}
