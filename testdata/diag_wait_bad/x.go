package p

import "context"

// F has an unparsable wait.
//
//idem:on_duplicate=wait wait=soon
func F(ctx context.Context, id string) error { return nil }
