// Package missingiface has an annotated interface and was never
// generated: the report stands at the interface's //idem: line.
package missingiface

import "context"

// Mailer's directive guards Send.
//
/* want `idem_gen.go is missing: run go generate` */ //idem:ttl=2h
type Mailer interface {
	Send(ctx context.Context, to string) error // want Send:"annotated\\(IdempotentMailer, interface\\)"
}
