package testkit

import "fmt"

// Seen is an argument of a give-up message (Eventually's msgAndArgs) that
// is read when the message is made, at the give-up, not when the wait
// begins: the message says what the wait saw last. f is called with
// whatever verb the format gives it:
//
//	var st string
//	testkit.Eventually(t, 30*time.Second, func() bool { st = state(); return st == "idle" },
//		"the session never became idle: last state %q", testkit.Seen(func() any { return st }))
type Seen func() any

// Format formats what f returns now, with the verb and flags given.
func (f Seen) Format(s fmt.State, verb rune) {
	fmt.Fprintf(s, fmt.FormatString(s, verb), f())
}
