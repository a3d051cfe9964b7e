package docker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// goarchToSeccomp names Go's architectures as Docker's profile's archMap
// does (the profile's own names, "amd64", "arm64", ...), for the ones the
// profile covers.
var goarchToSeccomp = map[string]string{"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}

// OCISeccompProfile returns glassroom's kernel seccomp profile (the one
// Docker containers get by default) resolved for a container with no
// capabilities on goarch, in the OCI runtime spec's form: no archMap,
// includes or excludes, only the architectures and the rules such a
// container gets. That is the form a Kubernetes Localhost profile must
// have: containerd reads a Localhost profile as OCI and ignores Docker's
// conditions, so Docker's form there would allow every rule meant only
// for CAP_SYS_ADMIN (unshare, setns, bpf, mount, ...). It may be called
// concurrently; it returns an error for an architecture the profile has
// no entry for.
func OCISeccompProfile(goarch string) ([]byte, error) {
	arch, ok := goarchToSeccomp[goarch]
	if !ok {
		return nil, fmt.Errorf("docker: seccomp profile: no architecture %q", goarch)
	}
	var doc struct {
		DefaultAction   string `json:"defaultAction"`
		DefaultErrnoRet *int   `json:"defaultErrnoRet,omitempty"`
		ArchMap         []struct {
			Architecture     string   `json:"architecture"`
			SubArchitectures []string `json:"subArchitectures"`
		} `json:"archMap"`
		Syscalls []map[string]json.RawMessage `json:"syscalls"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(defaultSeccomp)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("docker: seccomp profile: %w", err)
	}
	var arches []string
	for _, a := range doc.ArchMap {
		if a.Architecture == arch {
			arches = append([]string{a.Architecture}, a.SubArchitectures...)
		}
	}
	if arches == nil {
		return nil, fmt.Errorf("docker: seccomp profile: no archMap entry for %s", arch)
	}
	type condition struct {
		Arches []string `json:"arches"`
		Caps   []string `json:"caps"`
	}
	var rules []map[string]json.RawMessage
	for _, rule := range doc.Syscalls {
		var inc, exc condition
		if raw, ok := rule["includes"]; ok {
			if err := json.Unmarshal(raw, &inc); err != nil {
				return nil, fmt.Errorf("docker: seccomp profile: includes: %w", err)
			}
		}
		if raw, ok := rule["excludes"]; ok {
			if err := json.Unmarshal(raw, &exc); err != nil {
				return nil, fmt.Errorf("docker: seccomp profile: excludes: %w", err)
			}
		}
		// No capability is held: a rule that needs one is dropped, one
		// excluded for a capability holder stays. Arches are Docker's short
		// names (amd64, arm64, ...).
		if len(inc.Caps) > 0 || (len(inc.Arches) > 0 && !slices.Contains(inc.Arches, goarch)) || slices.Contains(exc.Arches, goarch) {
			continue
		}
		out := map[string]json.RawMessage{}
		for k, v := range rule {
			if k != "includes" && k != "excludes" && k != "comment" {
				out[k] = v
			}
		}
		rules = append(rules, out)
	}
	return json.MarshalIndent(struct {
		DefaultAction   string                       `json:"defaultAction"`
		DefaultErrnoRet *int                         `json:"defaultErrnoRet,omitempty"`
		Architectures   []string                     `json:"architectures"`
		Syscalls        []map[string]json.RawMessage `json:"syscalls"`
	}{doc.DefaultAction, doc.DefaultErrnoRet, arches, rules}, "", "  ")
}
