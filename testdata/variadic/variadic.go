// Package variadic: no context parameter (the wrapper uses
// context.Background), variadic parameters, and an (error) result.
package variadic

import "sync/atomic"

var tagged, logged atomic.Int64

// Tag labels an item.
//
//idem:ttl=300
func Tag(item string, labels ...string) ([]string, error) {
	tagged.Add(1)
	return append([]string{item}, labels...), nil
}

// Log writes a line, once.
//
//idem:on_duplicate=return
func Log(format string, args ...int) error {
	logged.Add(1)
	return nil
}
