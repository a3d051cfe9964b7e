package jupyter_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/app/apptest"
	"github.com/glassroom/glassroom/testkit"
)

// The kernels API in every language the gateway runs, through real
// Jupyter clients: JupyterLab's @jupyterlab/services in Node, and
// jupyter_server with --gateway-url. Languages a runtime has not
// installed are Unavailable (failures under CI=true).

// installedNames are the kernels g's runtime can start, sorted.
func installedNames(g *apptest.Gateway) []string {
	var out []string
	for _, k := range g.Manager.InstalledKernels() {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}

// jlabLanguages is what testdata/jlab/languages.mjs reports.
type jlabLanguages struct {
	Default string
	Specs   map[string]struct{ Name, Language, DisplayName string }
	Runs    []struct{ Name, ModelName, Language, Status, Stdout, Thrown string }
	Refused struct {
		Status  int
		Message string
	}
	Thrown string
}

// TestJupyterLabLanguages: JupyterLab's KernelSpecManager lists every
// kernel the gateway has installed (python3 and bash at least), and
// KernelManager.startNew({name}) starts a kernel of each that runs code in
// its language; a name the gateway does not run is a 400 that says so.
func TestJupyterLabLanguages(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			installed := installedNames(g)
			type want struct {
				Name string `json:"name"`
				Code string `json:"code"`
			}
			wanted := []want{{"python3", apptest.Print42("python3")}}
			for _, lang := range apptest.Languages() {
				if slices.Contains(installed, lang) {
					wanted = append(wanted, want{lang, apptest.Print42(lang)})
				}
			}
			arg, _ := json.Marshal(wanted)
			var r jlabLanguages
			stderr := testkit.RunNode(t, "testdata/jlab", "languages.mjs", &r, g.URL, apptest.KeyA, string(arg))
			if r.Thrown != "" {
				t.Fatalf("the client threw: %s\nstderr: %s", r.Thrown, stderr)
			}
			var listed []string
			for n, s := range r.Specs {
				listed = append(listed, n)
				if s.Name != n || s.Language == "" || !strings.HasSuffix(s.DisplayName, "(glassroom)") {
					t.Errorf("spec %s: %+v", n, s)
				}
			}
			sort.Strings(listed)
			if r.Default != "python3" || !slices.Equal(listed, installed) || r.Specs["python3"].Language != "python" {
				t.Fatalf("kernel specs %v (default %q, %+v), installed %v", listed, r.Default, r.Specs, installed)
			}
			if r.Refused.Status != http.StatusBadRequest || !strings.Contains(r.Refused.Message, `unknown language "cobol"`) {
				t.Errorf("starting a cobol kernel: %+v", r.Refused)
			}
			runs := map[string]int{}
			for i, run := range r.Runs {
				runs[run.Name] = i
			}
			languageOf := map[string]string{"python3": "python", "r": "R", "javascript": "typescript", "typescript": "typescript", "bash": "bash", "java": "java"}
			for _, lang := range append([]string{"python3"}, apptest.Languages()...) {
				t.Run(lang, func(t *testing.T) {
					g.NeedKernel(t, lang)
					i, ok := runs[lang]
					if !ok {
						t.Fatalf("no run of %s: %+v", lang, r.Runs)
					}
					run := r.Runs[i]
					if run.ModelName != lang || run.Status != "ok" || run.Stdout != "42\n" {
						t.Fatalf("%s through @jupyterlab/services: %+v", lang, run)
					}
					// Deno's kernel names its language typescript for both.
					if !strings.EqualFold(run.Language, languageOf[lang]) && !strings.EqualFold(run.Language, r.Specs[lang].Language) {
						t.Fatalf("%s kernel_info language %q", lang, run.Language)
					}
				})
			}
		})
	}
}

// TestJupyterServerLanguages: Debian's jupyter_server with
// --gateway-url=<glassroom> lists the gateway's kernel specs as its own,
// and a kernel of each installed language started through it runs code in
// that language over its channels.
func TestJupyterServerLanguages(t *testing.T) {
	for name, rt := range apptest.Runtimes() {
		t.Run(name, func(t *testing.T) {
			g := apptest.Start(t, rt(t), apptest.Options{})
			app := startJupyterApp(t, "jupyter_server", g.URL, apptest.KeyA)
			var specs struct {
				Default     string
				Kernelspecs map[string]struct {
					Name string
					Spec struct {
						Language    string
						DisplayName string `json:"display_name"`
					}
				}
			}
			if st, body := app.call(t, "GET", "/api/kernelspecs", nil, &specs); st != http.StatusOK {
				t.Fatalf("kernelspecs through jupyter_server: %d %s", st, body)
			}
			var listed []string
			for n := range specs.Kernelspecs {
				listed = append(listed, n)
			}
			sort.Strings(listed)
			if installed := installedNames(g); specs.Default != "python3" || !slices.Equal(listed, installed) {
				t.Fatalf("jupyter_server lists %v (default %q), the gateway has %v", listed, specs.Default, installed)
			}
			for _, lang := range append([]string{"python3"}, apptest.Languages()...) {
				t.Run(lang, func(t *testing.T) {
					g.NeedKernel(t, lang)
					if specs.Kernelspecs[lang].Spec.Language == "" {
						t.Fatalf("%s spec through jupyter_server: %+v", lang, specs.Kernelspecs[lang])
					}
					var k kernelModel
					if st, body := app.call(t, "POST", "/api/kernels", map[string]string{"name": lang}, &k); st != http.StatusCreated {
						t.Fatalf("start a %s kernel through jupyter_server: %d %s", lang, st, body)
					}
					defer app.call(t, "DELETE", "/api/kernels/"+k.ID, nil, nil)
					if k.Name != lang {
						t.Fatalf("kernel model %+v", k)
					}
					s, err := g.Client(t, apptest.KeyA).GetSession(t.Context(), strings.ReplaceAll(k.ID, "-", ""))
					if err != nil || s.Language != lang {
						t.Fatalf("the kernel as a session: %+v %v", s, err)
					}
					ws := "ws" + strings.TrimPrefix(app.url, "http") + "/api/kernels/" + k.ID + "/channels?session_id=" + randomHex(16) + "&token=" + app.token
					c := dialJupyter(t, ws, nil, false)
					defer c.close()
					info := c.ready()
					if li, _ := info.Content["language_info"].(map[string]any); li == nil || li["name"] == "" {
						t.Fatalf("%s kernel info: %v", lang, info)
					}
					rep, iopub := c.execute(apptest.Print42(lang))
					if rep.Content["status"] != "ok" || streamText(iopub) != "42\n" {
						t.Fatalf("%s through jupyter_server: %v %q", lang, rep, streamText(iopub))
					}
				})
			}
			var list []kernelModel
			testkit.Eventually(t, 30*time.Second, func() bool {
				st, _ := app.call(t, "GET", "/api/kernels", nil, &list)
				return st == http.StatusOK && len(list) == 0
			}, "kernels left after their deletion: %+v", list)
		})
	}
}
