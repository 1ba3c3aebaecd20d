// Package gone's annotation was removed after idem_gen.go was generated.
package gone // want `idem_gen.go is stale: the package has no //idem: functions any more \(run go generate\)`

import "context"

func Send(ctx context.Context, to string) error { return nil }
