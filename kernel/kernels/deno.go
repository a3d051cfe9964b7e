package kernels

import "fmt"

// javascript and typescript are the same Deno kernel (deno jupyter),
// started by the launcher's bridge on loopback ports: it starts in "/"
// and enters the working directory by code, so no deno.json or
// package.json there steers its start.
func javascript() Kernel {
	k := deno("javascript", "JavaScript (Deno)", "JS")
	k.Aliases = []string{"js", "javascript", "deno", "node"}
	k.Language = LanguageInfo{Name: "javascript", Mimetype: "text/javascript", FileExtension: ".js", CodeMirrorMode: "javascript", PygmentsLexer: "javascript"}
	k.SDKLanguage = "javascript"
	k.Hello = "console.log(6 * 7)"
	return k
}

func typescript() Kernel {
	k := deno("typescript", "TypeScript (Deno)", "TS")
	k.Aliases = []string{"ts", "typescript"}
	k.Language = LanguageInfo{Name: "typescript", Mimetype: "text/x.typescript", FileExtension: ".ts", CodeMirrorMode: "typescript",
		PygmentsLexer: "typescript", NbconvertExporter: "script"}
	k.SDKLanguage = "typescript"
	k.Hello = "const n: number = 6 * 7\nconsole.log(n)"
	return k
}

// denoBinary is where Deno is installed (scripts/install-deno.sh).
const denoBinary = "/usr/local/bin/deno"

func deno(name, display, label string) Kernel {
	return Kernel{
		Name:        name,
		DisplayName: display,
		Label:       label,
		EditorMode:  name,
		Launch: Launch{Kind: Bridged, Bridge: &BridgeProfile{
			Argv:       []string{denoBinary, "jupyter", "--kernel", "--quiet", "--conn", "{conn}"},
			Transport:  "tcp",
			KernelName: "deno",
			Heartbeat:  "kernel",
			Interrupt:  "message",
			ChdirCode:  "Deno.chdir(%s)",
			SyncCode:   "Deno.jupyter.broadcast(%s, {})",
			DropEnv:    []string{"DENO_", "NODE_"},
			Env:        map[string]string{"DENO_NO_UPDATE_CHECK": "1", "DENO_NO_PROMPT": "1", "DENO_NO_PACKAGE_JSON": "1", "NO_COLOR": "1"},
			PrivateEnv: map[string]string{"DENO_DIR": "deno"},
			// V8 reserves far more address space than it uses.
			UnlimitedAddressSpace: true,
		}},
		Probe:             Probe{Executables: []string{denoBinary}},
		NeedsAddressSpace: true,
		ReservedEnv: []ReservedEnv{
			{"DENO_", "it steers Deno at kernel start"},
			{"NODE_OPTIONS", "it steers Deno at kernel start"},
			{"NODE_ICU_DATA", "it steers Deno at kernel start"},
			{"NODE_CHANNEL_", "it steers Deno at kernel start"},
			{"NODE_UNIQUE_ID", "it steers Deno at kernel start"},
			{"NODE_CLUSTER", "it steers Deno at kernel start"},
		},
		Settings:    &Settings{Apply: denoApply, Restore: denoRestore},
		JupyterArgv: []string{"deno", "jupyter", "--kernel", "--conn", "{connection_file}"},
		Smoke:       []string{"deno", "jupyter", "--help"},
	}
}

// Deno (JavaScript and TypeScript): the saved state is a property of
// globalThis under a registered symbol. Plain JavaScript, valid as
// TypeScript (Deno's kernel does not type-check).
const denoApplyCode = `((p, d) => {
  const s = { env: p.map(([k]) => [k, Deno.env.get(k)]), cwd: null };
  if (d !== null) { try { s.cwd = Deno.cwd(); } catch (_) { /* gone */ } }
  globalThis[Symbol.for("glassroom.exec.settings")] = s;
  if (d !== null) {
    let dir = false;
    try { dir = Deno.statSync(d).isDirectory; } catch (_) { /* missing */ }
    if (!dir) throw new Error("cwd " + d + ": no such directory in the sandbox");
    Deno.chdir(d);
  }
  for (const [k, v] of p) Deno.env.set(k, v);
})(%s, %s);`

const denoRestore = `(() => {
  const key = Symbol.for("glassroom.exec.settings");
  const s = globalThis[key];
  if (s) {
    for (const [k, v] of s.env) { if (v === undefined) Deno.env.delete(k); else Deno.env.set(k, v); }
    if (s.cwd !== null) { try { Deno.chdir(s.cwd); } catch (_) { /* gone */ } }
    delete globalThis[key];
  }
})();`

func denoApply(envs [][2]string, cwd string) string {
	d := "null"
	if cwd != "" {
		d = jsonLit(cwd)
	}
	return fmt.Sprintf(denoApplyCode, pairsLit(envs), d)
}
