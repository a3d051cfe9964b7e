package kernels

import (
	"fmt"
	"strings"
)

// r is R with IRkernel, started by the launcher's bridge: IRkernel binds
// the gateway's unix sockets itself, the bridge answers the heartbeat
// (IRkernel answers it only between cells) and turns an interrupt into
// SIGINT.
func r() Kernel {
	return Kernel{
		Name:        "r",
		Aliases:     []string{"r", "ir"},
		DisplayName: "R",
		Label:       "R",
		Language:    LanguageInfo{Name: "R", Mimetype: "text/x-r-source", FileExtension: ".r", CodeMirrorMode: "r", PygmentsLexer: "r"},
		EditorMode:  "r",
		SDKLanguage: "r",
		Launch: Launch{Kind: Bridged, Bridge: &BridgeProfile{
			Argv: []string{"/usr/bin/R", "--no-echo", "--no-save", "--no-restore", "--no-site-file", "--no-init-file",
				"--no-environ", "--no-readline", "-e", "options(repos = c(CRAN = 'https://cloud.r-project.org')); IRkernel::main({conn_json})"},
			Transport: "ipc",
			Heartbeat: "bridge",
			Interrupt: "signal",
			DropEnv:   []string{"R_"},
			// No user library (R_LIBS_USER's default is under HOME, the
			// workspace), no user profile or environment file.
			Env: map[string]string{"R_LIBS_USER": "/dev/null/no-user-library", "R_PROFILE_USER": "/dev/null", "R_ENVIRON_USER": "/dev/null"},
		}},
		Probe: Probe{
			Executables: []string{"/usr/bin/R"},
			AnyOf:       []string{"/usr/lib/R/site-library/IRkernel/DESCRIPTION", "/usr/local/lib/R/site-library/IRkernel/DESCRIPTION", "/usr/lib/R/library/IRkernel/DESCRIPTION"},
		},
		HostConfig:  []string{"/etc/R"},
		ReservedEnv: []ReservedEnv{{"R_", "it steers R at kernel start"}},
		Settings:    &Settings{Apply: rApply, Restore: rRestore, Loud: true},
		Snapshot:    rSnapshot(),
		JupyterArgv: []string{"R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"},
		Smoke:       []string{"Rscript", "-e", "suppressPackageStartupMessages({library(IRkernel); library(ggplot2); library(dplyr)})"},
		Hello:       "cat(6 * 7, \"\\n\", sep = \"\")",
	}
}

// R: the saved state is an option (options() is global and not in the
// user's environment).
const rApplyCode = `base::local({
  p <- base::list(%s)
  d <- %s
  s <- base::list(env = base::lapply(p, function(x) base::c(x[1], base::Sys.getenv(x[1], unset = NA))), cwd = NULL)
  if (!base::is.null(d)) s$cwd <- base::getwd()
  base::options(glassroom.exec.settings = s)
  if (!base::is.null(d)) {
    if (!base::dir.exists(d)) base::stop(base::sprintf("cwd %%s: no such directory in the sandbox", d), call. = FALSE)
    base::setwd(d)
  }
  for (x in p) base::do.call(base::Sys.setenv, base::structure(base::list(x[2]), names = x[1]))
  base::invisible(NULL)
})`

const rRestore = `base::local({
  s <- base::getOption("glassroom.exec.settings")
  if (!base::is.null(s)) {
    for (x in s$env) {
      if (base::is.na(x[2])) base::Sys.unsetenv(x[1]) else base::do.call(base::Sys.setenv, base::structure(base::list(x[2]), names = x[1]))
    }
    if (!base::is.null(s$cwd)) base::try(base::setwd(s$cwd), silent = TRUE)
    base::options(glassroom.exec.settings = NULL)
  }
  base::invisible(NULL)
})`

func rApply(envs [][2]string, cwd string) string {
	d := "NULL"
	if cwd != "" {
		d = jsonLit(cwd)
	}
	var b strings.Builder
	for i, kv := range envs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("base::c(" + jsonLit(kv[0]) + ", " + jsonLit(kv[1]) + ")")
	}
	return fmt.Sprintf(rApplyCode, b.String(), d)
}
