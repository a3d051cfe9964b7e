// Package testkit is the test kit shared by glassroom's tests: waiting for
// a condition without sleeping a fixed time (Eventually), the one skip that
// knows about CI (Unavailable), the one skip of the fast tier
// (RealThing) and host uids no other test holds, for a runtime's
// sandboxes (UIDBase). Only _test.go files and test harnesses import it.
//
// The test tiers:
//   - `go test -short ./...` runs fakes only (no kernel, engine, browser or
//     npm client is started); RealThing skips the rest.
//   - `go test ./...` (and `make test`) runs everything; where a real
//     dependency is missing, Unavailable skips loudly, or fails when CI=true.
package testkit

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// InCI reports whether the tests run in CI (CI=true), where a missing
// dependency fails the test instead of skipping it.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends a test whose real dependency (Docker, a kernel image,
// Chromium, node, a Python module) is missing: it fails in CI and skips
// loudly elsewhere.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	if InCI() {
		t.Fatalf("unavailable in CI: %s", msg)
	}
	t.Skipf("\n\n*** SKIPPING: %s ***\n\n", msg)
}

// RealThing marks a test that starts a real kernel, container, browser or
// external client: `go test -short` skips it, so the fast tier runs fakes
// only. what names the real thing, for the skip message.
func RealThing(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: needs %s", what)
	}
}

// Poll is how often Eventually looks again.
const Poll = 5 * time.Millisecond

// Eventually waits until cond returns true, looking every Poll, and fails
// the test with the message (fmt.Sprintf of msgAndArgs) after timeout. It
// must be called from the test's own goroutine (it may call t.Fatalf).
// cond must be safe to call repeatedly.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msgAndArgs ...any) {
	t.Helper()
	if !Within(timeout, cond) {
		t.Fatalf("not within %v: %s", timeout, message(msgAndArgs))
	}
}

// Within reports whether cond became true within timeout, looking every
// Poll. It never fails a test, so goroutines may call it.
func Within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Poll)
	}
}

func message(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return "condition never held"
	}
	if f, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(f, msgAndArgs[1:]...)
	}
	return fmt.Sprint(msgAndArgs...)
}
