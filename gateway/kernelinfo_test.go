package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/glassroom/glassroom/sessions"
)

// TestContextKernelInfo: GET /v1/sessions/{id}/contexts/{ctx}/kernel_info
// answers with the kernel's own kernel_info_reply, whose language_info
// names the kernel's language and the version the kernel runs (what a
// notebook saved from the web UI writes into metadata.language_info); an
// unknown context, or another tenant's session, is a 404. Real ipykernel.
func TestContextKernelInfo(t *testing.T) {
	e := newEnv(t, localRuntime(t), sessions.Config{})
	s := e.create(keyA, nil)
	var info struct {
		Implementation string `json:"implementation"`
		LanguageInfo   struct {
			Name, Version, Mimetype string
			FileExtension           string `json:"file_extension"`
		} `json:"language_info"`
	}
	path := "/v1/sessions/" + s.ID + "/contexts/default/kernel_info"
	if code := e.call(keyA, http.MethodGet, path, nil, &info); code != http.StatusOK {
		t.Fatalf("GET %s: %d", path, code)
	}
	x := e.exec(keyA, s.ID, "import platform; platform.python_version()", 30)
	var result map[string]string
	if err := json.Unmarshal(x.Result, &result); err != nil {
		t.Fatalf("result %s: %v", x.Result, err)
	}
	version := result["text/plain"]
	if len(version) < 3 {
		t.Fatalf("python_version: %q", x.Result)
	}
	version = version[1 : len(version)-1] // the repr's quotes
	if info.Implementation != "ipython" || info.LanguageInfo.Name != "python" || info.LanguageInfo.Version != version ||
		info.LanguageInfo.FileExtension != ".py" || info.LanguageInfo.Mimetype != "text/x-python" {
		t.Errorf("kernel_info: %+v; want ipython's, Python %s", info, version)
	}

	var ae apiErr
	if code := e.call(keyA, http.MethodGet, "/v1/sessions/"+s.ID+"/contexts/r-00000000/kernel_info", nil, &ae); code != http.StatusNotFound || ae.Error.Code != "context_not_found" {
		t.Errorf("an unknown context: %d %+v", code, ae)
	}
	ae = apiErr{}
	if code := e.call(keyB, http.MethodGet, path, nil, &ae); code != http.StatusNotFound || ae.Error.Code != "not_found" {
		t.Errorf("another tenant's session: %d %+v", code, ae)
	}
}
