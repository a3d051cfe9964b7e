package python_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/images/python"
)

// TestLibrariesListed: the embedded list parses and holds what the issue
// asks for, fonts included.
func TestLibrariesListed(t *testing.T) {
	libs := python.Libraries()
	mods := python.Modules()
	for _, want := range []string{"numpy", "pandas", "matplotlib", "scipy", "sklearn", "seaborn", "statsmodels",
		"plotly", "openpyxl", "xlrd", "docx", "bs4", "lxml", "html5lib", "sympy", "networkx", "PIL", "imageio",
		"skimage", "requests", "tqdm", "tabulate", "yaml", "pytz", "dateutil", "ipywidgets", "pip"} {
		if !slices.Contains(mods, want) {
			t.Errorf("libraries.txt lacks %s", want)
		}
	}
	if !slices.ContainsFunc(libs, func(l python.Library) bool {
		return l.Import == python.NotAModule && strings.HasPrefix(l.Package, "fonts-")
	}) {
		t.Errorf("libraries.txt lists no font")
	}
}

func TestParseLibraries(t *testing.T) {
	got, err := python.ParseLibraries("# c\n\nnumpy  python3-numpy # x\n-\tfonts-wqy-microhei\nPIL python3-pil\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []python.Library{{"numpy", "python3-numpy"}, {"-", "fonts-wqy-microhei"}, {"PIL", "python3-pil"}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, bad := range []string{
		"",
		"# only a comment\n",
		"numpy\n",
		"numpy python3-numpy extra\n",
		"num-py python3-numpy\n",
		"1x python3-x\n",
		"a..b python3-x\n",
		"numpy Python3-Numpy\n",
		"numpy python3_numpy\n",
		"numpy python3-numpy\nnumpy python3-numpy2\n",
		"numpy python3-numpy\nnumpy2 python3-numpy\n",
	} {
		if _, err := python.ParseLibraries(bad); err == nil {
			t.Errorf("ParseLibraries(%q) succeeded", bad)
		}
	}
}

// TestInstallDepsListsLibraries: scripts/install-deps.sh installs exactly
// the packages of libraries.txt on the host (it reads the file; this
// checks what it makes of it).
func TestInstallDepsListsLibraries(t *testing.T) {
	out, err := exec.Command("bash", "../../scripts/install-deps.sh", "--print-libraries").Output()
	if err != nil {
		t.Fatalf("install-deps.sh --print-libraries: %v", err)
	}
	var want []string
	for _, l := range python.Libraries() {
		want = append(want, l.Package)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, want) {
		t.Fatalf("install-deps.sh installs %v, want libraries.txt's %v", got, want)
	}
}

// TestInstallDepsTrixie: ipywidgets comes from trixie.txt (version 8 or
// later, with the comm package), on the host as in the image: bookworm's
// ipywidgets 6 speaks widget protocol 2.0 only.
func TestInstallDepsTrixie(t *testing.T) {
	out, err := exec.Command("bash", "../../scripts/install-deps.sh", "--print-trixie").Output()
	if err != nil {
		t.Fatalf("install-deps.sh --print-trixie: %v", err)
	}
	lowest := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("install-deps.sh --print-trixie printed %q; want \"package lowest-version\" lines", line)
		}
		lowest[f[0]] = f[1]
	}
	if v := lowest["python3-ipywidgets"]; !strings.HasPrefix(v, "8.") {
		t.Errorf("python3-ipywidgets from trixie at %q or later; want 8.x", v)
	}
	if lowest["python3-comm"] == "" {
		t.Errorf("python3-comm is not taken from trixie (ipywidgets 8 needs comm >= 0.2.1; bookworm has none)")
	}
	if !slices.ContainsFunc(python.Libraries(), func(l python.Library) bool { return l.Package == "python3-ipywidgets" }) {
		t.Errorf("libraries.txt lacks python3-ipywidgets")
	}
}
