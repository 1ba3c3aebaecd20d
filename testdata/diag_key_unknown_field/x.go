package p

import "context"

type Req struct{ CustomerID, OrderID string }

// F keys on a misspelt field.
//
//idem:key=req.CustomerId,req.Order.ID
func F(ctx context.Context, req Req) error { return nil }
