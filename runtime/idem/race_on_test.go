//go:build race

package idem_test

// raceEnabled: allocation counts are not asserted under the race
// detector, which allocates on its own.
const raceEnabled = true
