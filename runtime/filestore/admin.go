package filestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// List implements idemstore.Admin: it calls fn with every record whose key
// starts with prefix, live or not yet cleaned up, reading each file without
// a lock (fn may call the store). Keys are hashed on disk, so List reads
// every record. A corrupt record does not stop the listing: List returns an
// error naming every one (wrapping idem.ErrCorruptRecord) at the end. An
// error from fn stops it at once and is returned.
func (s *Store) List(ctx context.Context, prefix string, fn func(idemstore.Record) error) error {
	var corrupt []error
	err := s.walk(ctx, func(dir string, names []string) error {
		for _, name := range names {
			h, ok := strings.CutSuffix(name, recExt)
			if !ok || !isHex(h, 64) {
				continue
			}
			p := s.pathsOf(dir, h)
			r, ok, err := s.read(&p, "")
			if errors.Is(err, idem.ErrCorruptRecord) {
				corrupt = append(corrupt, err)
				continue
			}
			if err != nil {
				return err
			}
			if ok && strings.HasPrefix(r.Key, prefix) {
				if err := fn(r); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(corrupt) > 0 {
		return fmt.Errorf("filestore: list skipped %d corrupt record(s): %w", len(corrupt), errors.Join(corrupt...))
	}
	return nil
}

// ForceRelease implements idemstore.Admin: it releases key whatever its owner
// and bumps its fence, so a still-running owner's heartbeat and completion
// fail with idem.ErrLeaseLost. The released record is kept for as long as
// the record had left to live (measured from its last update).
func (s *Store) ForceRelease(ctx context.Context, key string) (idemstore.Record, error) {
	if err := ctxErr(ctx, "force release", key); err != nil {
		return idemstore.Record{}, err
	}
	p := s.paths(key)
	l, err := s.lock(ctx, &p)
	if err != nil {
		return idemstore.Record{}, s.lockErr(ctx, "force release", key, err)
	}
	defer l.unlock()
	r, ok, err := s.read(&p, key)
	if err != nil {
		return idemstore.Record{}, err
	}
	now := s.now()
	if !ok || !live(&r, now) { // past retention: gone
		return idemstore.Record{}, fmt.Errorf("filestore: force release %q: %w", key, idem.ErrNotFound)
	}
	if err := ctxErr(ctx, "force release", key); err != nil {
		return idemstore.Record{}, err
	}
	keep := max(r.ExpiresAt.Sub(r.UpdatedAt), 0)
	r.State = idemstore.StateReleased
	r.Owner = idemstore.Token{}
	r.Fence++
	r.Result = nil
	r.ExpiresAt = now.Add(keep)
	r.UpdatedAt = now
	if err := s.write("force-release", &p, &r); err != nil {
		return idemstore.Record{}, err
	}
	return r, nil
}

// pathsOf returns the paths of the key whose hash is h, in fan-out dir.
func (s *Store) pathsOf(dir, h string) paths {
	base := filepath.Join(dir, h)
	p := paths{dir: dir, rec: base + recExt, lock: base + lockExt, tmp: base + tmpExt, ord: base + ordExt, items: base + itemsExt}
	decodeHex(p.sum[:], h)
	return p
}

// walk calls fn with the entries of every fan-out directory.
func (s *Store) walk(ctx context.Context, fn func(dir string, names []string) error) error {
	l1, err := readDirNames(s.root)
	if err != nil {
		return s.fsErr("listing store directory", s.root, err)
	}
	for _, a := range l1 {
		if !isHex(a, 2) {
			continue
		}
		d1 := filepath.Join(s.root, a)
		l2, err := readDirNames(d1)
		if err != nil {
			return s.fsErr("listing directory", d1, err)
		}
		for _, b := range l2 {
			if !isHex(b, 2) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("filestore: %w", err)
			}
			dir := filepath.Join(d1, b)
			names, err := readDirNames(dir)
			if err != nil {
				return s.fsErr("listing directory", dir, err)
			}
			if err := fn(dir, names); err != nil {
				return err
			}
		}
	}
	return nil
}
