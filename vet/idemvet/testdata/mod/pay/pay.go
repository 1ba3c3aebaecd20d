// Package pay has annotated functions; idemvet_test generates its
// idem_gen.go at run time, so it is always fresh.
package pay

import "context"

//idem:ttl=1h key=id
func Charge(ctx context.Context, id string) error { // want Charge:"annotated\\(Idempotent\\)"
	return nil
}

// Service has an annotated method.
type Service struct{}

//idem:ttl=1h key=id
func (s *Service) Refund(ctx context.Context, id string) error { // want Refund:"annotated\\(IdempotentService\\)"
	return nil
}

func sameFile(ctx context.Context) error {
	return Charge(ctx, "a") // want `a direct call of Charge bypasses its idempotent wrapper \(Idempotent\.Charge\)`
}

func recursive(ctx context.Context, w *Idempotent) error {
	if err := w.Charge(context.Background(), "b"); err != nil { // want `wrapper Charge called with context\.Background\(\) although ctx`
		return err
	}
	return Charge(ctx, "c") // want `a direct call of Charge`
}

// Book is a step: a recovery point of the guarded call that runs it.
//
//idem:step
func Book(ctx context.Context, id string) (string, error) { // want Book:"step\\(BookStep\\)"
	return "bk_" + id, nil
}

// Order is guarded: a direct call of its step runs again when it resumes.
//
//idem:ttl=1h key=id
func Order(ctx context.Context, id string) (string, error) { // want Order:"annotated\\(Idempotent\\)"
	if _, err := BookStep(ctx, id); err != nil {
		return "", err
	}
	return Book(ctx, id) // want `Book is a step \(//idem:step\) called directly inside the guarded Order: it runs again when the call resumes after a takeover or a retry; call BookStep`
}

// notGuarded calls the step as a plain function: nothing to report.
func notGuarded(ctx context.Context) (string, error) {
	return Book(ctx, "x")
}
