package kernels

import "fmt"

// pythonSnapshot captures the user namespace with dill: values by value,
// functions and classes defined in cells too (their code), modules by
// name (imported again on restore). Names starting with "_" and
// IPython's own are left out. Every value is pickled once alone to find
// those that cannot be (an open socket, a generator: reported with the
// reason), then all the others together, so that names sharing an object
// (an instance and its class) share it again after the restore. Restored
// functions and the methods of restored classes see the kernel's
// namespace as their globals, as if defined there.
func pythonSnapshot() *Snapshot {
	return &Snapshot{
		Capture: func(dir, name string) string {
			state, report := snapshotPaths(dir, name)
			return pythonExec(fmt.Sprintf("__glassroom_dir, __glassroom_state, __glassroom_report = %s, %s, %s\n",
				jsonLit(dir), jsonLit(state), jsonLit(report)) + pythonCaptureBody)
		},
		Restore: func(dir, name string) string {
			state, report := snapshotPaths(dir, name)
			return pythonExec(fmt.Sprintf("__glassroom_dir, __glassroom_state, __glassroom_report = %s, %s, %s\n",
				jsonLit(dir), jsonLit(state), jsonLit(report)) + pythonRestoreStateBody)
		},
		What: "the user namespace (values, functions and classes by value through dill; modules by name)",
	}
}

const pythonCaptureBody = `import json, os, types
import dill
ip = __import__("IPython").get_ipython()
ns, hidden = ip.user_ns, ip.user_ns_hidden
skip = {"In", "Out", "exit", "quit", "get_ipython"}
modules, values, uncaptured = {}, {}, []
for k, v in list(ns.items()):
    if k.startswith("_") or k in skip or (k in hidden and hidden[k] is v):
        continue
    if isinstance(v, types.ModuleType):
        modules[k] = v.__name__
        continue
    try:
        dill.dumps(v, recurse=True)
        values[k] = v
    except BaseException as e:
        uncaptured.append({"name": k, "reason": (type(e).__name__ + ": " + str(e))[:300]})
os.makedirs(__glassroom_dir, exist_ok=True)
with open(__glassroom_state, "wb") as f:
    dill.dump({"version": 1, "modules": modules, "values": values}, f, recurse=True)
with open(__glassroom_report, "w") as f:
    json.dump({"captured": sorted(list(modules) + list(values)), "uncaptured": uncaptured}, f)
`

const pythonRestoreStateBody = `import json, os, types, importlib
report = {"restored": [], "failed": []}
try:
    import dill
    with open(__glassroom_state, "rb") as f:
        state = dill.load(f)
    if not isinstance(state, dict) or not isinstance(state.get("modules"), dict) or not isinstance(state.get("values"), dict):
        raise ValueError("the state is not a glassroom snapshot")
    ns = __import__("IPython").get_ipython().user_ns
    def rebind(v):
        if isinstance(v, types.FunctionType) and v.__module__ == "__main__":
            f = types.FunctionType(v.__code__, ns, v.__name__, v.__defaults__, v.__closure__)
            f.__kwdefaults__, f.__qualname__, f.__doc__ = v.__kwdefaults__, v.__qualname__, v.__doc__
            f.__dict__.update(v.__dict__)
            return f
        if isinstance(v, type) and v.__module__ == "__main__":
            for a, m in list(vars(v).items()):
                if isinstance(m, types.FunctionType) and m.__module__ == "__main__":
                    setattr(v, a, rebind(m))
        return v
    for k, m in state["modules"].items():
        try:
            ns[str(k)] = importlib.import_module(str(m))
            report["restored"].append(str(k))
        except BaseException as e:
            report["failed"].append({"name": str(k), "reason": (type(e).__name__ + ": " + str(e))[:300]})
    for k, v in state["values"].items():
        ns[str(k)] = rebind(v)
        report["restored"].append(str(k))
except BaseException as e:
    report["error"] = ("the kernel's state could not be restored: " + type(e).__name__ + ": " + str(e))[:1000]
finally:
    try:
        os.remove(__glassroom_state)
    except OSError:
        pass
with open(__glassroom_report, "w") as f:
    json.dump(report, f)
`
