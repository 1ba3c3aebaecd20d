package main

import "testing"

// The demo checks its own claims (one charge per order, one execution per
// storm, a mismatch refused) and fails otherwise.
func TestQuickstart(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
