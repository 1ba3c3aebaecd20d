// Package multifile: annotations spread over files, free functions and
// methods of two types, output ordered by file and position.
package multifile

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type Repo struct{ name string }

// Save stores a document.
//
//idem:key=id
func (r *Repo) Save(ctx context.Context, id string, doc map[string]string) error {
	runs.Add(1)
	return nil
}

// Ping is a free function in the first file.
//
//idem:ttl=1m
func Ping(ctx context.Context) (string, error) {
	runs.Add(1)
	return "pong", nil
}
