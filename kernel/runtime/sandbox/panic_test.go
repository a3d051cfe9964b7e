package sandbox

import (
	"context"
	"strings"
	"testing"
)

// TestStartPanicNamesItsSite: a panic in a runtime's Start becomes an
// error that says where it happened (the recovered stack is gone).
func TestStartPanicNamesItsSite(t *testing.T) {
	b := NewBase(BaseConfig{ID: "panicking"})
	err := func() (err error) {
		defer b.CloseOnFailure(context.Background(), &err)
		panic("a planted panic")
	}()
	if err == nil || !strings.Contains(err.Error(), "(at sandbox/panic_test.go:") {
		t.Fatalf("want the panic's site in the error, got %v", err)
	}
}
