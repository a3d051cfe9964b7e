// Package httperr is how the gateway's errors become HTTP answers: Error,
// the error every handler of package gateway and its subpackages returns
// (an HTTP status, a public code, a message a client may see), and Of, the
// one mapping of the errors of packages sessions, workspace and
// workspace/fileedit (and of echo) to it. No package outside gateway maps errors to HTTP.
package httperr
