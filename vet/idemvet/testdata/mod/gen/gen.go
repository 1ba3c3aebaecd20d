// Package gen has an annotated generic function and a method of a
// generic type: calls that skip their wrappers are reported too.
package gen

import "context"

//idem:ttl=1h
func Publish[E ~string](ctx context.Context, e E) error { // want Publish:"annotated\\(Idempotent\\)"
	return nil
}

// Repo is generic.
type Repo[T ~string] struct{}

//idem:ttl=1h
func (r *Repo[T]) Save(ctx context.Context, v T) error { // want Save:"annotated\\(IdempotentRepo\\)"
	return nil
}

type topic string

func direct(ctx context.Context, r *Repo[topic]) error {
	if err := Publish(ctx, topic("a")); err != nil { // want `a direct call of Publish bypasses its idempotent wrapper \(IdempotentPublish\)`
		return err
	}
	if err := Publish[string](ctx, "b"); err != nil { // want `a direct call of Publish bypasses its idempotent wrapper \(IdempotentPublish\)`
		return err
	}
	return r.Save(ctx, "c") // want `a direct call of Repo\.Save bypasses its idempotent wrapper \(IdempotentRepo\.Save\)`
}

func wrapped(ctx context.Context, x *Idempotent, r *IdempotentRepo[topic]) error {
	if err := IdempotentPublish(x, ctx, topic("a")); err != nil {
		return err
	}
	return r.Save(ctx, "c")
}

// fresh calls the generic wrapper with a new context although the
// caller's is in scope.
func fresh(ctx context.Context, x *Idempotent) error {
	return IdempotentPublish(x, context.Background(), topic("a")) // want `wrapper IdempotentPublish called with context\.Background\(\) although ctx \(a context\.Context\) is in scope`
}
