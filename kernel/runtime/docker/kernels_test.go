package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
	"github.com/rs/zerolog"
)

// labelled is an image whose LabelKernels is label (no label at all when
// label is nil), as the engine describes it.
func labelled(label *string) image.InspectResponse {
	labels := map[string]string{"other": "x"}
	if label != nil {
		labels[LabelKernels] = *label
	}
	b, _ := json.Marshal(map[string]any{"Config": map[string]any{"Labels": labels}})
	var img image.InspectResponse
	if err := json.Unmarshal(b, &img); err != nil || img.Config == nil {
		panic(fmt.Sprintf("image description: %v", err))
	}
	return img
}

func names(ks []sandbox.KernelSpec) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.Name)
	}
	return out
}

// TestImageKernels: the label gives the kernels in glassroom's order, the
// default first; aliases count as their kernel; unknown names are set
// aside; an image without the label (or with an empty one) holds python3
// only.
func TestImageKernels(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name    string
		img     image.InspectResponse
		want    []string
		unknown []string
	}{
		{"no config", image.InspectResponse{}, []string{"python3"}, nil},
		{"no label", labelled(nil), []string{"python3"}, nil},
		{"empty label", labelled(s(" ")), []string{"python3"}, nil},
		{"build.sh's", labelled(s("python3,r,javascript,typescript,bash")), []string{"python3", "r", "javascript", "typescript", "bash"}, nil},
		{"any order, spaces", labelled(s(" bash, r ,python3,")), []string{"python3", "r", "bash"}, nil},
		{"aliases and repeats", labelled(s("py,js,deno,TS")), []string{"python3", "javascript", "typescript"}, nil},
		{"without python", labelled(s("r")), []string{"r"}, nil},
		{"unknown names", labelled(s("python3,cobol,java")), []string{"python3", "java"}, []string{"cobol"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, unknown := imageKernels(tc.img)
			if !slices.Equal(names(got), tc.want) || !slices.Equal(unknown, tc.unknown) {
				t.Fatalf("kernels %v unknown %v, want %v and %v", names(got), unknown, tc.want, tc.unknown)
			}
		})
	}
}

// imageEngine is an engine with runc whose every image is img; other calls
// panic.
type imageEngine struct {
	infoEngine
	img image.InspectResponse
}

func (e imageEngine) ImageInspect(context.Context, string, ...client.ImageInspectOption) (image.InspectResponse, error) {
	return e.img, nil
}

// TestStartRefusesAKernelTheImageLacks: Start refuses, before it touches
// the engine (which would panic here), a kernel the image's label does not
// list, with a SpecError naming the kernel and the image; an unlabelled
// image runs python3 only. Installed hands out copies.
func TestStartRefusesAKernelTheImageLacks(t *testing.T) {
	for _, tc := range []struct {
		label   *string
		refused []string
	}{
		{nil, []string{"r", "javascript", "typescript", "bash", "java"}},
		{func() *string { s := "python3,bash"; return &s }(), []string{"r", "javascript", "typescript", "java"}},
	} {
		cfg := Config{Image: "example/kernel:1", Common: sandbox.Common{StateDir: t.TempDir()}, Adopting: true}.withDefaults()
		os.Chmod(cfg.StateDir, 0o711)
		eng := imageEngine{infoEngine: engineWith(nil), img: labelled(tc.label)}
		r, err := newRuntime(context.Background(), cfg, eng, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range tc.refused {
			_, err := r.Start(context.Background(), sandbox.Spec{ID: "kernels-test-1", Kernel: k})
			var se *sandbox.SpecError
			if !errors.As(err, &se) || !errors.Is(err, sandbox.ErrBadSpec) {
				t.Fatalf("kernel %s: want a SpecError, got %v", k, err)
			}
			if want := "kernel " + k + " is not installed in image example/kernel:1"; se.Public() != want {
				t.Errorf("kernel %s: reason %q, want %q", k, se.Public(), want)
			}
		}
		got := r.Installed()
		if got[0].Name != "python3" || slices.Contains(names(got), "r") {
			t.Errorf("label %v: installed %v", tc.label, names(got))
		}
		got[0].Name, got[0].Aliases[0] = "changed", "changed"
		if again := r.Installed(); again[0].Name != "python3" || again[0].Aliases[0] == "changed" {
			t.Errorf("Installed shares its slice with the caller: %v", again[0])
		}
		r.Close()
	}
}
