package filestore

import (
	"context"
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
	err := s.walk(ctx, func(dir string, names []string) error {
		n, errs, err := s.cleanDir(ctx, dir, names)
		removed += n
		corrupt = append(corrupt, errs...)
		return err
	})
	if err != nil {
		return removed, err
	}
	if len(corrupt) > 0 {
		return removed, fmt.Errorf("filestore: cleanup left %d corrupt record(s) in place: %w", len(corrupt), errors.Join(corrupt...))
	}
	return removed, nil
}

// keyFiles says which files of one key a directory listing showed.
type keyFiles struct{ tmp, ord, items bool }

// cleanDir cleans one fan-out directory.
func (s *Store) cleanDir(ctx context.Context, dir string, names []string) (removed int, corrupt []error, err error) {
	// Every key with any file here, once.
	keys := make(map[string]keyFiles, len(names))
	for _, name := range names {
		ext := filepath.Ext(name)
		h := strings.TrimSuffix(name, ext)
		if (ext == recExt || ext == lockExt || ext == tmpExt || ext == ordExt || ext == itemsExt) && isHex(h, 64) {
			kf := keys[h]
			kf.tmp = kf.tmp || ext == tmpExt
			kf.ord = kf.ord || ext == ordExt
			kf.items = kf.items || ext == itemsExt
			keys[h] = kf
		}
	}
	for h, kf := range keys {
		if err := ctx.Err(); err != nil {
			return removed, corrupt, fmt.Errorf("filestore: cleanup: %w", err)
		}
		p := s.pathsOf(dir, h)
		n, err := s.cleanFiles(ctx, &p, kf)
		if errors.Is(err, idem.ErrCorruptRecord) {
			corrupt = append(corrupt, err) // left in place
			continue
		}
		if err != nil {
			return removed, corrupt, err
		}
		removed += n
	}
	return removed, corrupt, nil
}

// cleanFiles cleans one key whose files kf says the listing showed, and
// returns how many records it removed: a look without the lock first,
// since most records are live and have no temp file (one is left only by
// a crash mid-write), then cleanKey if there is work.
func (s *Store) cleanFiles(ctx context.Context, p *paths, kf keyFiles) (int, error) {
	r, ok, err := s.read(p, "")
	if err != nil {
		return 0, err
	}
	now := s.now()
	orderLive := false
	if kf.ord {
		o, found, err := s.readOrder(p, "")
		if err != nil {
			return 0, err
		}
		orderLive = found && now.Before(o.expiresAt)
	}
	work := kf.tmp || // a crash's leftover
		ok && !live(&r, now) || // an expired record
		kf.ord && !orderLive || // an expired ordering record
		!ok && kf.items || // a stream's items without their record
		!ok && !kf.ord // a lock file alone
	if !work {
		return 0, nil
	}
	return s.cleanKey(ctx, p)
}

// cleanKey, under the key's lock, removes its record and its ordering
// record if they are no longer live, any leftover temp file, and the lock
// file once nothing else of the key remains. It reports whether a record
// was removed.
func (s *Store) cleanKey(ctx context.Context, p *paths) (int, error) {
	l, err := s.lock(ctx, p)
	if err != nil {
		return 0, s.lockErr(ctx, "cleanup", p.rec, err)
	}
	defer l.unlock()
	now := s.now()
	r, hasRec, err := s.read(p, "")
	if err != nil {
		return 0, err
	}
	o, hasOrd, err := s.readOrder(p, "")
	if err != nil {
		return 0, err
	}
	n := 0
	if !hasRec || !live(&r, now) {
		// Before the record: see stream.go.
		if err := s.removeItems(p); err != nil {
			return 0, err
		}
	}
	if hasRec && !live(&r, now) {
		if err := os.Remove(p.rec); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, s.fsErr("removing expired record", p.rec, err)
		}
		hasRec, n = false, 1
	}
	if hasOrd && !now.Before(o.expiresAt) {
		if err := os.Remove(p.ord); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, s.fsErr("removing expired order record", p.ord, err)
		}
		hasOrd = false
	}
	// No writer is mid-write: we hold the lock.
	if err := os.Remove(p.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, s.fsErr("removing temp record", p.tmp, err)
	}
	if !hasRec && !hasOrd {
		if err := l.removeLockFile(p); err != nil {
			return n, err
		}
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

func decodeHex(dst []byte, h string) {
	for i := 0; i < len(dst) && 2*i+1 < len(h); i++ {
		dst[i] = unhex(h[2*i])<<4 | unhex(h[2*i+1])
	}
}

func unhex(c byte) byte {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}
