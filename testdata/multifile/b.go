package multifile

import (
	"context"
	"time"
)

type Cache struct{}

// Fill warms the cache. Only the context: every call has the same key.
//
//idem:lease=1m
func (Cache) Fill(ctx context.Context) (time.Duration, error) {
	runs.Add(1)
	return time.Second, nil
}

// Load is a second method of Repo, in another file.
//
//idem:on_duplicate=return
func (r *Repo) Load(ctx context.Context, id string) ([]byte, error) {
	runs.Add(1)
	return []byte(r.name + id), nil
}

//idem:on_duplicate=wait
func unexported(ctx context.Context, n uint16) (bool, error) {
	runs.Add(1)
	return n%2 == 0, nil
}
