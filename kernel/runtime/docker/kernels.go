package docker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/image"
	"github.com/glassroom/glassroom/kernel/runtime/sandbox"
)

// LabelKernels is the image label that lists the kernels an image holds:
// kernelspec names (sandbox.KernelSpec.Name), comma-separated, for example
// "python3,r,javascript,typescript,bash". images/python/build.sh writes it
// from what it installed.
const LabelKernels = "io.glassroom.kernels"

// imageKernels returns the kernels an image holds according to its
// LabelKernels, in sandbox.Kernels' order (the default first). An image
// without the label, or with an empty one, holds sandbox.DefaultKernel
// only (images from before the label). Names glassroom does not know are
// returned in unknown, for the caller to log; aliases count as their
// kernel.
func imageKernels(img image.InspectResponse) (installed []sandbox.KernelSpec, unknown []string) {
	var label string
	if img.Config != nil {
		label = strings.TrimSpace(img.Config.Labels[LabelKernels])
	}
	if label == "" {
		label = sandbox.DefaultKernel
	}
	names := map[string]bool{}
	for _, n := range strings.Split(label, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		k, ok := sandbox.LookupKernel(n)
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		names[k.Name] = true
	}
	for _, k := range sandbox.Kernels() {
		if names[k.Name] {
			installed = append(installed, k)
		}
	}
	return installed, unknown
}

// Installed implements sandbox.KernelLister: the kernels the runtime's
// image holds (its LabelKernels, read once by New), the default first
// when the image has it. The slice is fresh; safe for concurrent use.
func (r *Runtime) Installed() []sandbox.KernelSpec {
	out := slices.Clone(r.kernels)
	for i := range out {
		out[i].Aliases = slices.Clone(out[i].Aliases)
	}
	return out
}

// checkKernel returns a *sandbox.SpecError unless the image holds the
// kernel named (a canonical name; "" is sandbox.DefaultKernel).
func (r *Runtime) checkKernel(name string) error {
	if name == "" {
		name = sandbox.DefaultKernel
	}
	for _, k := range r.kernels {
		if k.Name == name {
			return nil
		}
	}
	return &sandbox.SpecError{Reason: fmt.Sprintf("kernel %s is not installed in image %s", name, r.cfg.Image)}
}
