// Package enum names the small enumerations of the queue adapters (an
// outcome's status, how a message was settled) for logs.
package enum

import "fmt"

// Name is names[v] for a v in 1..len(names)-1 (0 is no value), and
// kind(v) for any other, so that a value from a newer version still prints.
func Name[T ~uint8](names []string, kind string, v T) string {
	if v > 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, uint8(v))
}
