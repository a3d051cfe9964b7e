// Package kernels is the kernel registry: every kind of kernel glassroom
// can launch, each one Go value (a Kernel) in a file of its own, holding
// every fact about it that the rest of the house reads.
//
//   - Its names (canonical name, aliases, display name, the notebook's
//     label), its language_info, the web editor's mode and its logo.
//   - How it launches: ipykernel (python3), a program of ours that the
//     launcher runs (the bash and java kernels: bashkernel.py,
//     javakernel.py with JShellKernel.java, each after programkernel.py,
//     what they share), or a kernel of its own
//     behind the launcher's bridge, described by a BridgeProfile (R, Deno).
//   - Where a host or an image has it (Probe), whether it needs an
//     unlimited address space, the smoke test an image build runs.
//   - The environment names a session may not set because they steer it
//     (ReservedEnv), and the code that applies and restores one
//     execution's envs and working directory (Settings).
//   - Its Jupyter kernelspec argv and whether it speaks the debugger.
//
// Consumers read All and Lookup; nothing else in the house switches on a
// kernel's name. The values are built afresh by each call: callers may
// keep and change them. Everything here is pure: no I/O but Probe's
// file checks, safe for concurrent use.
//
// docs/architecture.md ("Adding a kernel") walks through what a new
// kernel takes.
package kernels
