// Package directives has //idem: directive problems: each is the
// generator's own diagnostic, at the generator's position.
package directives

import "context"

/* want `unknown option "tll" \(did you mean "ttl"\?\)` */ //idem:tll=1h
func Send(ctx context.Context, to string) error {          // want Send:"annotated"
	return nil
}

/* want `on_duplicate: "skip" is not one of return, raise, wait` */ //idem:on_duplicate=skip
func Mail(ctx context.Context, to string) error {                   // want Mail:"annotated"
	return nil
}

func Stray() {
	/* want `//idem: directive must be in the doc comment of a function or method` */ //idem:ttl=1h
}

//idem:ttl=1h
func Bad(ctx context.Context) int { // want Bad:"annotated" `Bad must return error as its last result`
	return 0
}
