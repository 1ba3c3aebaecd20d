package filestore

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestDiskFullTmpfs fills a real, tiny filesystem (a 64 KiB tmpfs, mounted
// when the test may mount; skipped otherwise) until the kernel says ENOSPC.
func TestDiskFullTmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); TestDiskFull covers ENOSPC through /dev/full (skipped regardless of CI)", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	s, err := New(dir, WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := make([]byte, 3000)
	var stored []string
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		key := fmt.Sprint("k", i)
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: tok(i), Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			full = err
			break
		}
		l := idemstore.Lease{Key: key, Owner: tok(i), Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
		if err := s.Complete(ctx, l, idemstore.Result{Data: data}); err != nil {
			full = err
			break
		}
		stored = append(stored, key)
	}
	if !errors.Is(full, idem.ErrStoreFull) || !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("filling the disk: %v after %d records, want ErrStoreFull wrapping ENOSPC", full, len(stored))
	}
	t.Logf("%d records fit; then: %v", len(stored), full)
	// Everything stored still replays; the failed write tore nothing.
	for _, key := range stored {
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: tok(999), Lease: time.Minute, TTL: time.Hour})
		if err != nil || res.Status != idemstore.ClaimCompleted || len(res.Result.Data) != len(data) {
			t.Fatalf("replay of %s on a full disk: %+v, %v", key, res.Status, err)
		}
	}
	if err := s.List(ctx, "", func(idemstore.Record) error { return nil }); err != nil {
		t.Fatalf("List after ENOSPC: %v", err)
	}
	// Freeing space makes the store writable again.
	for _, key := range stored[:3] {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "after", Owner: tok(1000), Lease: time.Minute, TTL: time.Hour}); err != nil {
		t.Fatalf("claim after freeing space: %v", err)
	}
}
