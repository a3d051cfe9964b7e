package kernels

import "fmt"

// Snapshot is how one kernel writes its variables to a file of the
// sandbox and reads them back (sessions' snapshots, forks and
// hibernation). Both run as executions of the kernel's language in the
// kernel's turn; the state file is only ever decoded by a kernel (code in
// the sandbox wrote it: it is hostile data). Each writes a report, JSON
// of at most a few hundred KiB, next to the state:
//
//   - capture: {"captured": [names], "uncaptured": [{"name", "reason"}]};
//   - restore: {"restored": [names], "failed": [{"name", "reason"}],
//     "error": "why nothing was restored" (absent when something was)},
//     and the state file is removed.
type Snapshot struct {
	// Capture returns code that writes the kernel's state to
	// dir/name.state and its report to dir/name.json (dir is absolute,
	// name a plain file name).
	Capture func(dir, name string) string
	// Restore returns code that loads dir/name.state into the kernel and
	// writes its report to dir/name.json.
	Restore func(dir, name string) string
	// Loud: the snippets run as non-silent executions (without history),
	// for a kernel that swallows a silent execution's errors (IRkernel).
	Loud bool
	// What says what a snapshot of this kernel holds, for people.
	What string
}

// snapshotPaths returns the state and report file of a snapshot's kernel.
func snapshotPaths(dir, name string) (state, report string) {
	return fmt.Sprintf("%s/%s.state", dir, name), fmt.Sprintf("%s/%s.json", dir, name)
}
