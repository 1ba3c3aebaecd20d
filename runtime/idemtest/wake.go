package idemtest

import (
	"context"
	"testing"
	"time"
)

// await runs read (a waiting Wait or ReadStream) in a goroutine with a
// 10s deadline and returns a channel that gets what it returns.
func await[T any](read func(context.Context) T) <-chan T {
	done := make(chan T, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		done <- read(rctx)
	}()
	return done
}

// within returns what done delivers within d; after d the test fails,
// naming the read with what.
func within[T any](t *testing.T, done <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
	var zero T
	return zero
}

// wokenBy checks that the waiting read behind done (named what) stays
// blocked while nothing changes, and returns within 5s of the change
// that do makes (named change); it returns what the read returned.
func wokenBy[T any](t *testing.T, what, change string, done <-chan T, do func() error) T {
	t.Helper()
	select {
	case v := <-done:
		t.Fatalf("%s returned %+v before the %s", what, v, change)
	case <-time.After(100 * time.Millisecond):
	}
	if err := do(); err != nil {
		t.Fatal(err)
	}
	return within(t, done, 5*time.Second, what+" after the "+change)
}
