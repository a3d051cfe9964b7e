package local

// SetFreezerStateReader makes the cgroups of the sandboxes r starts from
// now on poll a freeze in progress through read instead of os.ReadFile.
func SetFreezerStateReader(r *Runtime, read func(name string) ([]byte, error)) {
	r.readFreezerState = read
}

// TemplatePID returns the pid of r's running kernel template, 0 when none
// runs.
func TemplatePID(r *Runtime) int {
	if r.fork == nil {
		return 0
	}
	r.fork.mu.Lock()
	defer r.fork.mu.Unlock()
	if r.fork.cur == nil {
		return 0
	}
	return r.fork.cur.info.PID
}
