package sessions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"time"

	"github.com/glassroom/glassroom/egress"
)

// Template is an operator-defined preset a session is created from
// (CreateOptions.Template): the language of its first context, its
// default limits, network allowlist, idle timeout and environment. The
// request's own fields override the template's, within the operator's
// ceilings (the runtime's maximum limits, the egress ceiling).
type Template struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Language    string            `json:"language"`                 // a kernel name or alias; "" is python3
	Limits      Limits            `json:"limits"`                   // zero fields: the gateway's defaults
	Network     Network           `json:"network"`                  // empty: no network
	IdleTimeout time.Duration     `json:"-"`                        // 0: the gateway's default
	IdleS       float64           `json:"idle_timeout_s,omitempty"` // IdleTimeout in seconds (the file's and the API's form)
	Env         map[string]string `json:"env,omitempty"`
}

// Built-in templates: both python3, the gateway's default limits, no network.
const (
	TemplateDefault         = "default"
	TemplateCodeInterpreter = "code-interpreter-v1"
)

// maxTemplates bounds a templates file.
const maxTemplates = 256

// templateName is the shape of a template's name.
var templateName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// builtinTemplates are the templates every gateway has.
func builtinTemplates() templateSet {
	return templateSet{
		TemplateDefault:         {Name: TemplateDefault, Language: "python3", Description: "Python 3, the gateway's default limits, no network"},
		TemplateCodeInterpreter: {Name: TemplateCodeInterpreter, Language: "python3", Description: "Python 3, the gateway's default limits, no network (E2B's code interpreter)"},
	}
}

// LoadTemplates reads an operator's templates file: a JSON object
// {"name": {"language": ..., "limits": {...}, "network": {"allow": [...]},
// "idle_timeout_s": n, "env": {...}, "description": ...}}. Unknown fields
// are refused. A template may redefine a built-in one. The templates'
// languages, limits and networks are checked when the manager is made
// (Manager.New), against its runtime and egress ceiling.
func LoadTemplates(path string) (map[string]Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sessions: templates: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("sessions: templates %s: %w", path, err)
	}
	if len(raw) > maxTemplates {
		return nil, fmt.Errorf("sessions: templates %s: more than %d templates", path, maxTemplates)
	}
	out := make(map[string]Template, len(raw))
	for name, v := range raw {
		var t Template
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("sessions: template %q: %w", name, err)
		}
		t.Name = name
		if t.IdleS < 0 || t.IdleS > 7*24*3600 {
			return nil, fmt.Errorf("sessions: template %q: idle_timeout_s out of range", name)
		}
		t.IdleTimeout = time.Duration(t.IdleS * float64(time.Second))
		out[name] = t
	}
	return out, nil
}

// templateSet is the gateway's templates by name: the built-in ones and
// Config.Templates. Never changed once the manager is made; safe for
// concurrent reads.
type templateSet map[string]Template

// validate checks the configured templates' names, limits,
// languages and networks; it is called by New.
func (ts templateSet) validate(maxIdle time.Duration, admit func(Network) (egress.Policy, error)) error {
	for name, t := range ts {
		if !templateName.MatchString(name) {
			return fmt.Errorf("sessions: template %q: the name must be 1..64 of [A-Za-z0-9._-]", name)
		}
		if t.Limits != (Limits{}) {
			if err := t.Limits.Validate(); err != nil {
				return fmt.Errorf("sessions: template %q: %w", name, err)
			}
		}
		if t.IdleTimeout != 0 && (t.IdleTimeout < time.Second || t.IdleTimeout > maxIdle) {
			return fmt.Errorf("sessions: template %q: idle timeout must be within 1s..%v", name, maxIdle)
		}
		if _, err := admit(t.Network); err != nil {
			return fmt.Errorf("sessions: template %q: %w", name, err)
		}
	}
	return nil
}

// Templates returns the gateway's templates, sorted by name.
func (m *Manager) Templates() []Template {
	out := make([]Template, 0, len(m.templates))
	for _, t := range m.templates {
		t.IdleS = t.IdleTimeout.Seconds()
		if t.Network.Allow == nil {
			t.Network.Allow = []string{}
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// apply fills opts's unset fields from its template. An unknown
// template is ErrInvalid ("unknown template").
func (ts templateSet) apply(opts CreateOptions) (CreateOptions, error) {
	name := opts.Template
	if name == "" {
		name = TemplateDefault
	}
	t, ok := ts[name]
	if !ok {
		return opts, invalid("unknown template %q (GET /v1/templates lists them)", truncate(name, 64))
	}
	opts.Template = name
	if opts.Kernel == "" {
		opts.Kernel = t.Language
	}
	opts.Limits = opts.Limits.Or(t.Limits)
	if len(opts.Network.Allow) == 0 && len(opts.Network.Deny) == 0 {
		opts.Network = t.Network
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = t.IdleTimeout
	}
	if len(t.Env) > 0 {
		env := make(map[string]string, len(t.Env)+len(opts.Env))
		for k, v := range t.Env {
			env[k] = v
		}
		for k, v := range opts.Env {
			env[k] = v
		}
		opts.Env = env
	}
	return opts, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
