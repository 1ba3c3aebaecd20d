package filestore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Cleanup removes every record that is no longer live (finished or
// released records past their TTL, in-progress records past lease + TTL),
// together with leftover temp files and lock files of keys that have no
// record, and returns how many records it removed. It is safe to run while
// other goroutines and processes use the store (each removal happens under
// the key's lock after a re-read), and from several processes at once.
//
// Corrupt record files are left in place for an operator to inspect; the
// returned error lists them (it wraps idem.ErrCorruptRecord) after the rest
// of the directory has been cleaned. Removing a record forgets its fence,
// as with any store: run Cleanup on a schedule, not after every call.
func (s *Store) Cleanup(ctx context.Context) (int, error) {
	var corrupt []error
	removed := 0
	l1, err := readDirNames(s.root)
	if err != nil {
		return 0, s.fsErr("listing store directory", s.root, err)
	}
	for _, a := range l1 {
		if !isHex(a, 2) {
			continue
		}
		d1 := filepath.Join(s.root, a)
		l2, err := readDirNames(d1)
		if err != nil {
			return removed, s.fsErr("listing directory", d1, err)
		}
		for _, b := range l2 {
			if !isHex(b, 2) {
				continue
			}
			n, errs, err := s.cleanDir(ctx, filepath.Join(d1, b))
			removed += n
			corrupt = append(corrupt, errs...)
			if err != nil {
				return removed, err
			}
		}
	}
	if len(corrupt) > 0 {
		return removed, fmt.Errorf("filestore: cleanup left %d corrupt record(s) in place: %w", len(corrupt), errors.Join(corrupt...))
	}
	return removed, nil
}

// cleanDir cleans one fan-out directory.
func (s *Store) cleanDir(ctx context.Context, dir string) (removed int, corrupt []error, err error) {
	names, err := readDirNames(dir)
	if err != nil {
		return 0, nil, s.fsErr("listing directory", dir, err)
	}
	// Every key with any file here, once, and whether it has a temp file.
	keys := make(map[string]bool, len(names))
	for _, name := range names {
		ext := filepath.Ext(name)
		h := strings.TrimSuffix(name, ext)
		if (ext == recExt || ext == lockExt || ext == tmpExt) && isHex(h, 64) {
			keys[h] = keys[h] || ext == tmpExt
		}
	}
	for h, hasTmp := range keys {
		if err := ctx.Err(); err != nil {
			return removed, corrupt, fmt.Errorf("filestore: cleanup: %w", err)
		}
		base := filepath.Join(dir, h)
		p := paths{dir: dir, rec: base + recExt, lock: base + lockExt, tmp: base + tmpExt}
		if _, err := hex.Decode(p.sum[:], []byte(h)); err != nil {
			continue
		}
		// Look without the lock first: most records are live and have no
		// temp file (one is left only by a crash mid-write).
		r, ok, rerr := s.read(&p, "")
		if errors.Is(rerr, idem.ErrCorruptRecord) {
			corrupt = append(corrupt, rerr)
			continue
		}
		if rerr != nil {
			return removed, corrupt, rerr
		}
		if ok && live(&r, s.now()) && !hasTmp {
			continue
		}
		n, err := s.cleanKey(ctx, &p)
		if err != nil {
			if errors.Is(err, idem.ErrCorruptRecord) {
				corrupt = append(corrupt, err)
				continue
			}
			return removed, corrupt, err
		}
		removed += n
	}
	return removed, corrupt, nil
}

// cleanKey removes a key's files under its lock if it still has no live
// record, and reports whether a record was removed.
func (s *Store) cleanKey(ctx context.Context, p *paths) (int, error) {
	l, err := s.lock(ctx, p)
	if err != nil {
		return 0, s.lockErr(ctx, "cleanup", p.rec, err)
	}
	defer l.unlock()
	r, ok, err := s.read(p, "")
	if err != nil {
		return 0, err
	}
	if ok && live(&r, s.now()) {
		// Live (or claimed again since we looked): only a crash's
		// leftover temp file goes. No writer is mid-write: we hold the lock.
		if err := os.Remove(p.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, s.fsErr("removing temp record", p.tmp, err)
		}
		return 0, nil
	}
	n := 0
	if ok {
		if err := os.Remove(p.rec); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, s.fsErr("removing expired record", p.rec, err)
		}
		n = 1
	}
	if err := os.Remove(p.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, s.fsErr("removing temp record", p.tmp, err)
	}
	if err := l.removeLockFile(p); err != nil {
		return n, err
	}
	return n, s.syncDir(p.dir)
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
