package jupyter

import (
	"bytes"
	"image/png"
	"io/fs"
	"testing"

	"github.com/glassroom/glassroom/kernel/kernels"
)

// TestEveryKernelHasLogos: every kernel glassroom knows, installed here or
// not, has its three logos embedded: PNGs of 32 and 64 pixels and an SVG.
func TestEveryKernelHasLogos(t *testing.T) {
	for _, k := range kernels.All() {
		res := kernelResources(k.Name)
		if len(res) != 3 || res["logo-32x32"] == "" || res["logo-64x64"] == "" || res["logo-svg"] == "" {
			t.Errorf("%s: resources %v", k.Name, res)
			continue
		}
		for file, size := range map[string]int{"logo-32x32.png": 32, "logo-64x64.png": 64} {
			data, err := fs.ReadFile(logos, "logos/"+k.Name+"/"+file)
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil || img.Bounds().Dx() != size || img.Bounds().Dy() != size {
				t.Errorf("%s/%s: %v", k.Name, file, err)
			}
		}
		if svg, err := fs.ReadFile(logos, "logos/"+k.Name+"/logo-svg.svg"); err != nil || !bytes.Contains(svg, []byte("<svg")) || bytes.Contains(svg, []byte("<script")) {
			t.Errorf("%s's SVG: %v", k.Name, err)
		}
	}
}
