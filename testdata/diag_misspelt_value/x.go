package p

import "context"

// F has misspelt option values.
//
//idem:on_duplicate=wiat on_failure=unlok
func F(ctx context.Context, id string) error { return nil }
