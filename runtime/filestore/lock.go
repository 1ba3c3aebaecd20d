package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// paths are the files of one key. All live in one fan-out directory, so a
// rename never crosses directories and one directory fsync covers it.
type paths struct {
	sum  [32]byte
	dir  string // root/ab/cd
	rec  string // root/ab/cd/<sha256hex>.rec: the record
	lock string // root/ab/cd/<sha256hex>.lock: flock target, empty
	tmp  string // root/ab/cd/<sha256hex>.tmp: the record being written
}

func (s *Store) paths(key string) paths {
	sum := sha256.Sum256([]byte(key))
	var h [64]byte
	hex.Encode(h[:], sum[:])
	dir := filepath.Join(s.root, string(h[0:2]), string(h[2:4]))
	base := filepath.Join(dir, string(h[:]))
	return paths{sum: sum, dir: dir, rec: base + recExt, lock: base + lockExt, tmp: base + tmpExt}
}

const (
	recExt  = ".rec"
	lockExt = ".lock"
	tmpExt  = ".tmp"
)

// keyLock is a held per-key lock: an in-process stripe slot plus an
// exclusive flock on the key's lock file.
type keyLock struct {
	s      *Store
	fd     int
	stripe chan struct{}
}

// lock takes the key's lock for one read-modify-write. Same-process callers
// queue on a stripe channel first (so a crowd of goroutines does not spin
// on flock); the flock then excludes other processes. The flock is taken
// non-blocking in a backoff loop so ctx bounds the wait even if the holder
// is a stopped process. The kernel drops the flock when its holder dies, so
// a SIGKILLed process never leaves a key locked.
func (s *Store) lock(ctx context.Context, p *paths) (*keyLock, error) {
	stripe := s.stripes[p.sum[0]]
	select {
	case stripe <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	fd, err := s.flock(ctx, p)
	if err != nil {
		<-stripe
		return nil, err
	}
	return &keyLock{s: s, fd: fd, stripe: stripe}, nil
}

func (s *Store) flock(ctx context.Context, p *paths) (int, error) {
	mkdirDone := false
	for {
		fd, err := openRetry(p.lock, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, filePerm)
		if errors.Is(err, syscall.ENOENT) && !mkdirDone {
			if err := s.ensureDir(p.dir); err != nil {
				return -1, err
			}
			mkdirDone = true
			continue
		}
		if err != nil {
			return -1, s.fsErr("creating lock file", p.lock, err)
		}
		if err := flockWait(ctx, fd); err != nil {
			syscall.Close(fd)
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return -1, err
			}
			return -1, s.fsErr("flock of lock file", p.lock, err)
		}
		// Cleanup and Delete unlink a lock file while holding it. A caller
		// that opened the old file before the unlink and got its flock
		// after must not proceed: it would exclude no one. Only the file
		// currently at the path counts.
		var held, cur syscall.Stat_t
		if err := syscall.Fstat(fd, &held); err != nil {
			syscall.Close(fd)
			return -1, s.fsErr("stat of lock file", p.lock, err)
		}
		err = syscall.Stat(p.lock, &cur)
		if err == nil && held.Ino == cur.Ino && held.Dev == cur.Dev {
			return fd, nil
		}
		syscall.Close(fd)
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			return -1, s.fsErr("stat of lock file", p.lock, err)
		}
	}
}

// flockWait takes an exclusive flock on fd, polling with backoff until ctx
// is done. Holders keep it for one record write (microseconds, or a few
// milliseconds with fsync), so the backoff stays short.
func flockWait(ctx context.Context, fd int) error {
	backoff := 20 * time.Microsecond
	var t *time.Timer
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			if t != nil {
				t.Stop()
			}
			return nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err == syscall.EINTR {
			continue
		}
		if t == nil {
			t = time.NewTimer(backoff)
		} else {
			t.Reset(backoff)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		backoff = min(backoff*2, 2*time.Millisecond)
	}
}

// unlock releases the flock (closing the descriptor drops it) and the
// stripe slot.
func (l *keyLock) unlock() {
	syscall.Close(l.fd)
	<-l.stripe
}

// removeLockFile unlinks the lock file while l holds it; see flock for why
// that is safe.
func (l *keyLock) removeLockFile(p *paths) error {
	if err := os.Remove(p.lock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return l.s.fsErr("removing lock file", p.lock, err)
	}
	return nil
}

func openRetry(path string, flag int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flag, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
