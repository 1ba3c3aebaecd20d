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
