package billing

import "context"

type ChargeReq struct{ ID string }

type Receipt struct{ ID string }

type RefundReq struct{ ID string }

type Refund struct{ ID string }

// Charge and MakeRefund have one shape (a struct of a string in, a
// struct out): their Specs' signatures, which leave type and field
// names out, are the same, so only their names can tell their records
// apart.
//
//idem:name=payments.op
func Charge(ctx context.Context, req ChargeReq) (Receipt, error) { return Receipt(req), nil }

// MakeRefund was given Charge's name.
//
//idem:name=payments.op
func MakeRefund(ctx context.Context, req RefundReq) (Refund, error) { return Refund(req), nil }
