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
	ord  string // root/ab/cd/<sha256hex>.ord: an ordering entity's record
	// items is root/ab/cd/<sha256hex>.items: a stream's items (stream.go).
	items string
}

func (s *Store) paths(key string) paths {
	sum := sha256.Sum256([]byte(key))
	var h [64]byte
	hex.Encode(h[:], sum[:])
	dir := filepath.Join(s.root, string(h[0:2]), string(h[2:4]))
	base := filepath.Join(dir, string(h[:]))
	return paths{sum: sum, dir: dir, rec: base + recExt, lock: base + lockExt, tmp: base + tmpExt, ord: base + ordExt, items: base + itemsExt}
}

const (
	recExt  = ".rec"
	lockExt = ".lock"
	tmpExt  = ".tmp"
	ordExt  = ".ord"
)

// keyLock is a held lock on one key, or on an ordering entity and a key:
// in-process stripe slots plus exclusive flocks on the lock files.
type keyLock struct {
	s       *Store
	fds     [2]int
	nfd     int
	stripes [2]chan struct{}
	nstripe int
}

// lock takes the key's lock for one read-modify-write. Same-process callers
// queue on a stripe channel first (so a crowd of goroutines does not spin
// on flock); the flock then excludes other processes. The flock is taken
// non-blocking in a backoff loop so ctx bounds the wait even if the holder
// is a stopped process. The kernel drops the flock when its holder dies, so
// a SIGKILLed process never leaves a key locked.
func (s *Store) lock(ctx context.Context, p *paths) (*keyLock, error) {
	return s.lockAll(ctx, p, nil)
}

// lockAll locks first and, when second is not nil, second too. Deadlock
// freedom: stripes are taken in index order; flocks are taken entity first,
// record second, and an entity's lock file (named after its order key) is
// never a record's, so no two lockers wait on each other in a cycle.
func (s *Store) lockAll(ctx context.Context, first, second *paths) (*keyLock, error) {
	if second != nil && second.lock == first.lock {
		second = nil // one key's lock twice would wait on itself
	}
	l := &keyLock{s: s}
	a := first.sum[0]
	if second != nil && second.sum[0] != a {
		b := second.sum[0]
		if b < a {
			a, b = b, a
		}
		l.stripes[1] = s.stripes[b]
		l.nstripe = 1
	}
	l.stripes[0] = s.stripes[a]
	order := [2]chan struct{}{l.stripes[0], l.stripes[1]}
	for i := 0; i <= l.nstripe; i++ {
		select {
		case order[i] <- struct{}{}:
		case <-ctx.Done():
			for j := 0; j < i; j++ {
				<-order[j]
			}
			return nil, ctx.Err()
		}
	}
	l.nstripe++
	for _, p := range []*paths{first, second} {
		if p == nil {
			break
		}
		fd, err := s.flock(ctx, p)
		if err != nil {
			l.unlock()
			return nil, err
		}
		l.fds[l.nfd] = fd
		l.nfd++
	}
	return l, nil
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
	defer stopTimer(&t)
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
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
		if err := pause(ctx, &t, backoff); err != nil {
			return err
		}
		backoff = min(backoff*2, 2*time.Millisecond)
	}
}

// pause waits d on *t, a timer made at the first pause and reset at the
// next, or until ctx is done, and then returns ctx's error.
func pause(ctx context.Context, t **time.Timer, d time.Duration) error {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-(*t).C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopTimer stops *t if pause made it.
func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
	}
}

// unlock releases the flocks (closing a descriptor drops its flock) and
// the stripe slots.
func (l *keyLock) unlock() {
	for i := l.nfd - 1; i >= 0; i-- {
		syscall.Close(l.fds[i])
	}
	for i := l.nstripe - 1; i >= 0; i-- {
		<-l.stripes[i]
	}
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
