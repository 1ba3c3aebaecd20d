// Package p: a standard library type whose marshaling pair does not give
// back the value it was given is refused, with the omit= that lifts it.
package p

import (
	"context"
	"regexp"
)

// Rule holds a compiled expression.
type Rule struct {
	Name string
	Expr *regexp.Regexp
}

// Compile compiles a rule.
//
//idem:ttl=1h
func Compile(ctx context.Context, src string) (Rule, error) {
	return Rule{Name: src, Expr: regexp.MustCompile(src)}, nil
}
