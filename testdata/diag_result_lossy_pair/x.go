// Package p: a standard library type whose marshaling pair does not give
// back the value it was given is refused, with the omit= that lifts it.
package p

import (
	"context"
	"crypto/sha3"
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

// Hash hashes in steps.
//
//idem:ttl=1h
func Hash(ctx context.Context, src string) (*sha3.SHA3, error) {
	h := sha3.New512()
	h.Write([]byte(src))
	return h, nil
}
