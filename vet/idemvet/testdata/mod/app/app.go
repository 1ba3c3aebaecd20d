// Package app calls package pay's annotated functions from another
// package: the facts carry the annotations across.
package app

import (
	"context"

	"example.com/vt/pay"
)

func Direct(ctx context.Context) error {
	return pay.Charge(ctx, "x") // want `a direct call of pay\.Charge bypasses its idempotent wrapper \(Idempotent\.Charge\)`
}

func Value() func(context.Context, string) error {
	return pay.Charge // want `a value of pay\.Charge bypasses`
}

func MethodValue(ctx context.Context, s *pay.Service) error {
	f := s.Refund // want `a value of pay\.Service\.Refund bypasses its idempotent wrapper \(IdempotentService\.Refund\)`
	return f(ctx, "y")
}

func MethodCall(ctx context.Context, s *pay.Service) error {
	return s.Refund(ctx, "y") // want `a direct call of pay\.Service\.Refund`
}

func MethodExpr() any {
	return (*pay.Service).Refund // want `a value of pay\.Service\.Refund`
}

func WithWrapper(ctx context.Context, w *pay.Idempotent) error {
	return pay.Charge(ctx, "x") // want `a direct call of pay\.Charge`
}

func Escaped(ctx context.Context) error {
	return pay.Charge(ctx, "x") //idem:direct the migration replays with its own dedup
}

func EscapedAbove(ctx context.Context) error {
	//idem:direct the migration replays with its own dedup
	return pay.Charge(ctx, "x")
}

// EscapedDoc is a repair tool.
//
//idem:direct repairs run once, by hand
func EscapedDoc(ctx context.Context) error {
	return pay.Charge(ctx, "x")
}

func TrailingEscapeCoversItsLineOnly(ctx context.Context) error {
	_ = pay.Charge(ctx, "x")    //idem:direct the first call only
	return pay.Charge(ctx, "y") // want `a direct call of pay\.Charge`
}

func NoReason(ctx context.Context) error {
	return pay.Charge(ctx, "x") /* want `//idem:direct needs a reason` */ //idem:direct
}

func Fresh(ctx context.Context, w *pay.Idempotent) error {
	return w.Charge(context.Background(), "x") // want `wrapper Charge called with context\.Background\(\) although ctx \(a context\.Context\) is in scope`
}

func FreshInClosure(ctx context.Context, w *pay.Idempotent) func() error {
	return func() error {
		return w.Charge(context.TODO(), "x") // want `wrapper Charge called with context\.TODO\(\) although ctx`
	}
}

func LocalContext(w *pay.Idempotent) error {
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = c
	return w.Charge(context.TODO(), "x") // want `although c \(a context\.Context\)`
}

func NoContext(w *pay.Idempotent) error {
	return w.Charge(context.Background(), "x") // nothing better to pass
}

func ContextLater(w *pay.Idempotent) error {
	err := w.Charge(context.Background(), "x") // the context below is not in scope yet
	ctx := context.Background()
	_ = ctx
	return err
}

func ServiceWrapper(ctx context.Context, s *pay.IdempotentService) error {
	return s.Refund(context.Background(), "r") // want `wrapper Refund called with context\.Background\(\)`
}

func Through(ctx context.Context, w *pay.Idempotent) error {
	return w.Charge(ctx, "ok")
}
