package cleanup_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/cleanup"
)

func TestRunIsLastInFirstOutAndJoinsErrors(t *testing.T) {
	var order []string
	var s cleanup.Stack
	s.PushFunc("a", func() { order = append(order, "a") })
	s.Push("b", func() error { order = append(order, "b"); return errors.New("b failed") })
	s.Push("c", func() error { order = append(order, "c"); panic("c exploded") })
	err := s.Run()
	if strings.Join(order, "") != "cba" {
		t.Fatalf("order %v", order)
	}
	if err == nil || !strings.Contains(err.Error(), "b failed") || !strings.Contains(err.Error(), "c exploded") {
		t.Fatalf("errors %v", err)
	}
	if s.Run() != nil || len(order) != 3 {
		t.Fatal("a second Run repeated steps")
	}
}

func create(fail, explode bool, undone *[]string) (err error) {
	var s cleanup.Stack
	defer s.Unwind(&err)
	s.PushFunc("dir", func() { *undone = append(*undone, "dir") })
	s.PushFunc("slot", func() { *undone = append(*undone, "slot") })
	if explode {
		panic("handshake")
	}
	if fail {
		return errors.New("start failed")
	}
	return nil
}

func TestUnwind(t *testing.T) {
	var undone []string
	if err := create(false, false, &undone); err != nil || len(undone) != 0 {
		t.Fatalf("success undid %v (%v)", undone, err)
	}
	if err := create(true, false, &undone); err == nil || strings.Join(undone, ",") != "slot,dir" {
		t.Fatalf("failure: %v undid %v", err, undone)
	}
	undone = nil
	if err := create(false, true, &undone); err == nil || !strings.Contains(err.Error(), "panic: handshake") || len(undone) != 2 {
		t.Fatalf("panic: %v undid %v", err, undone)
	}
}
