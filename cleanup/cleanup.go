// Package cleanup provides Stack, the undo log of a multi-step creation:
// each step that succeeds pushes what undoes it, and on failure (an error
// or a panic) the undo steps run last-in-first-out. It replaces success
// flags and copied error paths in constructors such as session creation
// and sandbox start.
package cleanup

import (
	"errors"
	"fmt"
)

// Stack is an undo log. The zero value is ready to use. It is not safe for
// concurrent use: it belongs to the goroutine doing the creation.
type Stack struct {
	steps []step
}

type step struct {
	name string
	undo func() error
}

// Push records how to undo a step that succeeded.
func (s *Stack) Push(name string, undo func() error) {
	s.steps = append(s.steps, step{name, undo})
}

// PushFunc is Push for an undo step that cannot fail.
func (s *Stack) PushFunc(name string, undo func()) {
	s.Push(name, func() error { undo(); return nil })
}

// Run undoes every recorded step, last first, and empties the stack. A
// panicking step is reported as its error; the remaining steps still run.
// It returns the steps' errors joined.
func (s *Stack) Run() error {
	var errs []error
	for i := len(s.steps) - 1; i >= 0; i-- {
		if err := s.steps[i].run(); err != nil {
			errs = append(errs, fmt.Errorf("cleanup: %s: %w", s.steps[i].name, err))
		}
	}
	s.steps = nil
	return errors.Join(errs...)
}

func (st step) run() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return st.undo()
}

// Release forgets every step: the creation succeeded and what it made now
// belongs to the caller.
func (s *Stack) Release() { s.steps = nil }

// Unwind is meant to be deferred first in a constructor with named results
// err (and the value): if the constructor panics, the panic becomes an error;
// if it fails, the stack runs and its errors are joined to err. On success
// it does nothing; the constructor must then call Release (or nothing: a
// nil *err with steps left is treated as success).
func (s *Stack) Unwind(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("panic: %v", r)
	}
	if *err == nil {
		s.Release()
		return
	}
	if uerr := s.Run(); uerr != nil {
		*err = errors.Join(*err, uerr)
	}
}
