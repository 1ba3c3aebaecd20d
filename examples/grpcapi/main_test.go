package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRetryReplays: the program's own run, checked: the retry after the
// lost response is a replay, and the method ran once.
func TestRetryReplays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out strings.Builder
	runs, err := run(ctx, &out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "status SERVING, replayed [true], method runs 1\n"; out.String() != want || runs != 1 {
		t.Errorf("output %q (runs %d), want %q", out.String(), runs, want)
	}
}
