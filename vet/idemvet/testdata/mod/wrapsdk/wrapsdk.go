// Package wrapsdk wraps sdkx's functions with directives above blank
// vars: calls of them from this package bypass the wrappers.
package wrapsdk

import (
	"context"

	"example.com/vt/sdkx"
)

//idem:ttl=1h as=ChargeOnce
var _ = sdkx.Charge

//idem:ttl=1h
var _ = (*sdkx.Client).Refund

func use(ctx context.Context, c *sdkx.Client, x *Idempotent) {
	sdkx.Charge(ctx, "a") // want `a direct call of sdkx.Charge bypasses its idempotent wrapper \(Idempotent.ChargeOnce\)`
	c.Refund(ctx, "r")    // want `a direct call of sdkx.Client.Refund bypasses its idempotent wrapper \(IdempotentClient.Refund\)`
	f := sdkx.Charge      // want `a value of sdkx.Charge bypasses its idempotent wrapper`
	_ = f
	x.ChargeOnce(ctx, "a")
	//idem:direct a deliberate bypass, with its reason
	sdkx.Charge(ctx, "b")
}
