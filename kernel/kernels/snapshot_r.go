package kernels

import "fmt"

// rSnapshot captures the global environment with save() (R's own
// serialization, as save.image), leaving out connections, which do not
// survive it (reported); load() restores it.
func rSnapshot() *Snapshot {
	return &Snapshot{
		Capture: func(dir, name string) string {
			state, report := snapshotPaths(dir, name)
			return fmt.Sprintf(rCaptureCode, jsonLit(dir), jsonLit(state), jsonLit(report))
		},
		Restore: func(dir, name string) string {
			state, report := snapshotPaths(dir, name)
			return fmt.Sprintf(rRestoreStateCode, jsonLit(state), jsonLit(report))
		},
		Loud: true,
		What: "the global environment (save and load)",
	}
}

// The report's JSON is written by hand: jsonlite is not a dependency.
const rJSONHelpers = `  q <- function(s) base::paste0("\"", base::gsub("([\"\\\\])", "\\\\\\1", base::gsub("[[:cntrl:]]", " ", s)), "\"")
  arr <- function(v) base::paste0("[", base::paste(base::vapply(v, q, ""), collapse = ","), "]")
  objs <- function(n, why) base::paste0("[", base::paste(base::sprintf("{\"name\":%%s,\"reason\":%%s}", base::vapply(n, q, ""), base::vapply(why, q, "")), collapse = ","), "]")
`

const rCaptureCode = `base::local({
  d <- %s; state <- %s; report <- %s
` + rJSONHelpers + `  g <- base::globalenv()
  nm <- base::ls(g)
  bad <- base::Filter(function(n) base::inherits(base::get(n, envir = g), "connection"), nm)
  ok <- base::setdiff(nm, bad)
  base::dir.create(d, showWarnings = FALSE, recursive = TRUE)
  base::save(list = ok, file = state, envir = g)
  base::writeLines(base::paste0("{\"captured\":", arr(ok), ",\"uncaptured\":", objs(bad, base::rep("a connection does not survive serialization", base::length(bad))), "}"), report)
  base::invisible(NULL)
})`

const rRestoreStateCode = `base::local({
  state <- %s; report <- %s
` + rJSONHelpers + `  got <- base::tryCatch(base::load(state, envir = base::globalenv()), error = function(e) e)
  base::unlink(state)
  if (base::inherits(got, "error")) {
    base::writeLines(base::paste0("{\"restored\":[],\"failed\":[],\"error\":", q(base::paste("the kernel's state could not be restored:", base::conditionMessage(got))), "}"), report)
  } else {
    base::writeLines(base::paste0("{\"restored\":", arr(got), ",\"failed\":[]}"), report)
  }
  base::invisible(NULL)
})`
