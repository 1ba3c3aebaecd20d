package x

import "context"

//idem:step
func NoContext(id string) error { return nil }

//idem:step
func TwoResults(ctx context.Context) (int, string, error) { return 0, "", nil }

//idem:step ttl=1h
func WithTTL(ctx context.Context) error { return nil }

//idem:step
func Generic[T any](ctx context.Context, v T) (T, error) { return v, nil }

//idem:step
func NoError(ctx context.Context) int { return 0 }

//idem:step
func Taken(ctx context.Context) error { return nil }

// TakenStep is already declared.
func TakenStep() {}
