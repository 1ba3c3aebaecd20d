//go:build !race

package idem_test

const raceEnabled = false
