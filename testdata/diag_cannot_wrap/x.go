package main

import "context"

//idem:ttl=1h
func init() {}

//idem:ttl=1h
func main() {}

//idem:ttl=1h
func F(ctx context.Context) error { return nil }
