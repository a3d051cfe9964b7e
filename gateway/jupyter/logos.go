package jupyter

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/glassroom/glassroom/gateway/internal/httperr"
	"github.com/labstack/echo/v4"
)

// logos are the kernels' logos, in logos/{kernel}/: logo-32x32.png,
// logo-64x64.png and logo-svg.svg (made by scripts/kernel-logos.py;
// sources and licences in logos/LICENSES.md).
//
//go:embed logos/*/logo-*
var logos embed.FS

// logoFiles are the logo files of kernel (its spec name), in name order.
func logoFiles(kernel string) []string {
	entries, err := fs.ReadDir(logos, "logos/"+kernel)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasPrefix(e.Name(), "logo-") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// kernelResources is a kernel spec's resources map as jupyter_server
// makes it: each logo file by its name without the extension
// ("logo-64x64"), as the URL path that serves it.
func kernelResources(kernel string) map[string]string {
	out := map[string]string{}
	for _, f := range logoFiles(kernel) {
		out[strings.TrimSuffix(f, path.Ext(f))] = "/kernelspecs/" + kernel + "/" + f
	}
	return out
}

// resource is GET /kernelspecs/{name}/{file}: a logo of an
// installed kernel, or a 404.
func (h *kernelSpecHandlers) resource(c echo.Context) error {
	name, file := c.Param("name"), c.Param("file")
	installed := false
	for _, k := range h.mgr.InstalledKernels() {
		installed = installed || k.Name == name
	}
	notFound := httperr.New(http.StatusNotFound, "not_found", "kernel spec %s has no resource %s", clipID(name), clipID(file))
	if !installed || !strings.HasPrefix(file, "logo-") || strings.ContainsAny(file, "/\\") || !fs.ValidPath(file) {
		return notFound
	}
	data, err := fs.ReadFile(logos, "logos/"+name+"/"+file)
	if err != nil {
		return notFound
	}
	ctype := "image/png"
	if path.Ext(file) == ".svg" {
		ctype = "image/svg+xml"
		// An SVG opened on its own is a document: it runs nothing here.
		c.Response().Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	}
	c.Response().Header().Set("Cache-Control", "private, max-age=86400")
	return c.Blob(http.StatusOK, ctype, data)
}
