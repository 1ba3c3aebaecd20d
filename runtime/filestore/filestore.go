package filestore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

const (
	dirPerm  = 0o700
	filePerm = 0o600
	// maxResult bounds a stored result; the record format has 32-bit lengths.
	maxResult = maxRecordSize - headerSize - trailerSize - 64<<10
)

// Store is an idemstore.Store kept in a directory. It is safe for concurrent use
// by many goroutines and by many processes on one host that open the same
// directory. See the package documentation for the layout and guarantees.
type Store struct {
	root string
	config
	stripes [256]chan struct{}

	// openTemp opens the temporary file a record is written to; tests
	// replace it to inject write errors (ENOSPC from /dev/full).
	openTemp func(name string) (*os.File, error)
}

var (
	_ idemstore.Store   = (*Store)(nil)
	_ idemstore.Orderer = (*Store)(nil)
	_ idemstore.Admin   = (*Store)(nil)
)

// SupportsOrdering reports that the store implements idemstore.OrderClaim: an
// entity's last accepted time is a small record file of its own, checked
// and advanced under the entity's lock together with the claim.
func (s *Store) SupportsOrdering() bool { return true }

// Option configures New.
type Option func(*config)

// config is what the options set.
type config struct {
	now    func() time.Time
	noSync bool
	poll   time.Duration
}

// WithClock replaces the host clock (time.Now) the store judges leases and
// expiry by. For tests: every process sharing a directory must use the same
// clock, or leases mean different things to different processes.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithoutSync turns off fsync of record files and directories.
//
// UNSAFE FOR DURABILITY: a process crash (even SIGKILL) still never loses
// or tears a record, because the kernel's page cache survives the process,
// but a power loss or kernel crash can lose recent claims and completions
// (so a finished call may run again) and can leave a torn record, which
// then reads as idem.ErrCorruptRecord until deleted. Use it for tests on
// tmpfs, for benchmarks, or for stores whose contents are disposable.
func WithoutSync() Option { return func(c *config) { c.noSync = true } }

// WithPollInterval sets the longest pause between Wait's checks of a
// running key (default 20ms). Wait starts at 1ms and backs off to it.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// New opens (creating it with mode 0700 if needed) the store rooted at dir
// and checks that the directory is writable by creating and removing a
// probe file, so a read-only or foreign-owned directory fails here with a
// clear error rather than on the first claim. Such a failure wraps
// idem.ErrStoreUnavailable and the cause (fs.ErrPermission, and
// idem.ErrStoreFull for a full disk). New takes no ctx: the check is a few
// local system calls, which a ctx could not interrupt anyway. It also
// fails, without touching the directory, on a nil clock or a poll interval
// that is not positive.
func New(dir string, opts ...Option) (*Store, error) {
	c := config{now: time.Now, poll: 20 * time.Millisecond}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case c.now == nil:
		return nil, errors.New("filestore: WithClock(nil)")
	case c.poll <= 0:
		return nil, fmt.Errorf("filestore: WithPollInterval(%v): not positive", c.poll)
	}
	s, err := open(dir, c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", idem.ErrStoreUnavailable, err)
	}
	return s, nil
}

func open(dir string, c config) (*Store, error) {
	if dir == "" {
		return nil, errors.New("filestore: empty directory name")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	s := &Store{root: abs, config: c}
	for i := range s.stripes {
		s.stripes[i] = make(chan struct{}, 1)
	}
	s.openTemp = func(name string) (*os.File, error) {
		return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, filePerm)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, s.fsErr("creating store directory", abs, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, s.fsErr("opening store directory", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("filestore: %s is not a directory", abs)
	}
	if err := s.probe(); err != nil {
		return nil, err
	}
	return s, nil
}

// Root returns the store's directory.
func (s *Store) Root() string { return s.root }

func (s *Store) probe() error {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	name := filepath.Join(s.root, ".probe-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe file's name says nothing the op does not
		}
		return s.fsErr("writing a probe file in the store directory", s.root, err)
	}
	_, werr := f.Write([]byte{0})
	cerr := f.Close()
	rerr := os.Remove(name)
	if err := errors.Join(werr, cerr, rerr); err != nil {
		return s.fsErr("checking the store directory", s.root, err)
	}
	return nil
}

// fsErr wraps a filesystem error with what the store was doing and, for
// the failures an operator must act on, a plain diagnosis: a full disk
// (also idem.ErrStoreFull, so Do reports the store unavailable and replays
// that need no write keep working) and a directory the process may not
// write to.
func (s *Store) fsErr(op, path string, err error) error {
	// The message names the path once: drop the *PathError's copy of it.
	var pe *os.PathError
	var le *os.LinkError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err
	} else if errors.As(err, &le) {
		err = le.Err
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w: filestore: disk full (%s %s): %w", idem.ErrStoreFull, op, path, err)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EROFS):
		if path == s.root { // the op names it: say so once
			return fmt.Errorf("filestore: %s %s: not writable: %w", op, path, err)
		}
		return fmt.Errorf("filestore: store directory %s is not writable (%s %s): %w", s.root, op, path, err)
	}
	return fmt.Errorf("filestore: %s %s: %w", op, path, err)
}

// ensureDir creates a key's fan-out directories and, unless sync is off,
// fsyncs each parent that gained an entry so the directories survive a
// power loss along with the records written into them.
func (s *Store) ensureDir(dir string) error {
	parent := filepath.Dir(dir)
	for _, d := range []string{parent, dir} {
		err := os.Mkdir(d, dirPerm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return s.fsErr("creating directory", d, err)
		}
		if err := s.syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) syncDir(dir string) error {
	if s.noSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return s.fsErr("opening directory for fsync", dir, err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return s.fsErr("fsync of directory", dir, err)
	}
	return nil
}

// read loads the key's record. ok is false when there is no record file.
// It needs no lock: records are only ever replaced by rename, so a reader
// sees a whole old or a whole new file. An undecodable file is an error
// wrapping idem.ErrCorruptRecord, never "absent". key == "" (Cleanup, which
// knows only the file name) checks the stored key against the name's hash.
func (s *Store) read(p *paths, key string) (r idemstore.Record, ok bool, err error) {
	bp := readBufs.Get().(*[]byte)
	b, err := readFile(p.rec, (*bp)[:0])
	if cap(b) <= 64<<10 { // do not pin a rare huge buffer
		*bp = b[:0]
		defer readBufs.Put(bp)
	}
	if err == syscall.ENOENT {
		return r, false, nil
	}
	if err != nil {
		return r, false, s.fsErr("reading record", p.rec, err)
	}
	r, err = decodeRecord(b)
	if err != nil {
		return r, false, fmt.Errorf("filestore: record file %s (key %q): %w; delete it (Store.Delete) to recover the key", p.rec, key, err)
	}
	// A file under another key's name (copied, or an editor's work) must
	// not answer for this key.
	if key != "" && r.Key != key || key == "" && sha256.Sum256([]byte(r.Key)) != p.sum {
		return r, false, fmt.Errorf("filestore: record file %s holds key %q, which does not hash to its name: %w", p.rec, r.Key, idem.ErrCorruptRecord)
	}
	return r, true, nil
}

// readOrder loads an ordering entity's record, like read.
func (s *Store) readOrder(p *paths, key string) (o orderRecord, ok bool, err error) {
	bp := readBufs.Get().(*[]byte)
	b, err := readFile(p.ord, (*bp)[:0])
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		defer readBufs.Put(bp)
	}
	if err == syscall.ENOENT {
		return o, false, nil
	}
	if err != nil {
		return o, false, s.fsErr("reading order record", p.ord, err)
	}
	if o, err = decodeOrder(b); err != nil {
		return o, false, fmt.Errorf("filestore: order record file %s (entity %q): %w; remove the file to recover the entity", p.ord, key, err)
	}
	if key != "" && o.key != key || key == "" && sha256.Sum256([]byte(o.key)) != p.sum {
		return o, false, fmt.Errorf("filestore: order record file %s holds entity %q, which does not hash to its name: %w", p.ord, o.key, idem.ErrCorruptRecord)
	}
	return o, true, nil
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// readFile reads a whole file into buf with raw system calls: os.Open
// would add an fstat and an allocation to every replay.
func readFile(name string, buf []byte) ([]byte, error) {
	fd, err := openRetry(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return buf, err
	}
	defer syscall.Close(fd)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxRecordSize {
				return buf, fmt.Errorf("%w: larger than %d bytes", idem.ErrCorruptRecord, maxRecordSize)
			}
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// write replaces the key's record atomically: the encoding goes to the
// key's temp file (the key lock makes its name private), is fsynced, and is
// renamed over the record; then the directory is fsynced so the rename
// itself is durable. A crash at any point leaves the old record or the new
// one, never a mix; a leftover temp file is overwritten by the next write
// and removed by Cleanup.
func (s *Store) write(op string, p *paths, r *idemstore.Record) error {
	return s.replace(op, p, p.rec, encodeRecord(r))
}

// replace atomically replaces dst (a file of p's key) with b; see write.
func (s *Store) replace(op string, p *paths, dst string, b []byte) error {
	f, err := s.openTemp(p.tmp)
	if err != nil {
		return s.fsErr("creating temp record", p.tmp, err)
	}
	if crashHook != nil {
		// Tests kill the process between two halves of the write to
		// leave a torn temp file behind.
		half := len(b) / 2
		_, err = f.Write(b[:half])
		crashHook(op + "-tmp-partial")
		if err == nil {
			_, err = f.Write(b[half:])
		}
	} else {
		_, err = f.Write(b)
	}
	if err == nil {
		hook(op, "tmp-written")
		if !s.noSync {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p.tmp)
		return s.fsErr("writing record", p.tmp, err)
	}
	hook(op, "tmp-synced")
	if err := os.Rename(p.tmp, dst); err != nil {
		os.Remove(p.tmp)
		return s.fsErr("renaming record into place", dst, err)
	}
	hook(op, "renamed")
	return s.syncDir(p.dir)
}

// live reports whether r still counts at now. An in-progress record stays
// live until its lease plus the claim's TTL (ExpiresAt), so a crashed
// owner's fence is not reused soon after the crash; finished and released
// records until ExpiresAt.
func live(r *idemstore.Record, now time.Time) bool { return now.Before(r.ExpiresAt) }

// answer decides a claim that needs no write: a live finished record, a
// live lease, or a fingerprint mismatch. done is false when the caller
// acquires (absent, expired, or released or a lease to take over with the
// record's own fingerprint).
//
// A live record keeps its first claim's fingerprint in every state, an
// expired lease and a release included, so another payload is a mismatch
// until the record expires. Claim runs answer again under the key lock,
// which makes the refusal part of the atomic claim.
func answer(r *idemstore.Record, ok bool, req *idemstore.ClaimRequest, now time.Time) (res idemstore.ClaimResult, done bool) {
	if !ok || !live(r, now) {
		return res, false
	}
	if r.Fingerprint != req.Fingerprint {
		return idemstore.ClaimResult{Status: idemstore.ClaimMismatch, Fence: r.Fence}, true
	}
	switch r.State {
	case idemstore.StateInProgress:
		if !now.Before(r.LeaseUntil) {
			return res, false
		}
		return idemstore.ClaimResult{Status: idemstore.ClaimInProgress, Fence: r.Fence, LeaseUntil: r.LeaseUntil}, true
	case idemstore.StateCompleted, idemstore.StateFailed:
		st := idemstore.ClaimCompleted
		if r.State == idemstore.StateFailed {
			st = idemstore.ClaimFailed
		}
		return idemstore.ClaimResult{Status: st, Fence: r.Fence, Result: idemstore.Result{Data: r.Result}}, true
	}
	return res, false
}

func ctxErr(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("filestore: %s %q: %w", op, key, err)
	}
	return nil
}

// Claim implements idemstore.Store. A replay, a live lease or a mismatch is
// answered from one unlocked read of the record file; only an acquisition
// takes the key lock, re-reads and writes.
func (s *Store) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	if err := ctxErr(ctx, "claim", req.Key); err != nil {
		return idemstore.ClaimResult{}, err
	}
	p := s.paths(req.Key)
	r, ok, err := s.read(&p, req.Key)
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	if res, done := answer(&r, ok, &req, s.now()); done {
		return res, nil
	}
	var entity *paths
	if req.Order.Key != "" {
		e := s.paths(req.Order.Key)
		entity = &e
	}
	var l *keyLock
	if entity != nil {
		l, err = s.lockAll(ctx, entity, &p)
	} else {
		l, err = s.lock(ctx, &p)
	}
	if err != nil {
		return idemstore.ClaimResult{}, s.lockErr(ctx, "claim", req.Key, err)
	}
	defer l.unlock()
	hook("claim", "locked")
	return s.claimLocked(ctx, &req, &p, entity)
}

// claimLocked is Claim under the key lock (and the entity's, for an
// ordered claim): it re-reads the record and, unless that answers the
// claim, advances the entity and writes the new claim.
func (s *Store) claimLocked(ctx context.Context, req *idemstore.ClaimRequest, p, entity *paths) (idemstore.ClaimResult, error) {
	r, ok, err := s.read(p, req.Key)
	if err != nil {
		return idemstore.ClaimResult{}, err
	}
	now := s.now()
	if res, done := answer(&r, ok, req, now); done {
		return res, nil
	}
	status := idemstore.ClaimAcquired
	var fence uint64
	var steps map[string][]byte
	if ok {
		// An expired record keeps its fence until Cleanup removes it.
		fence = r.Fence
		if r.State == idemstore.StateInProgress && live(&r, now) {
			status = idemstore.ClaimTakenOver
		}
		if live(&r, now) {
			steps = r.Steps // a retained record's: the same call resumes
		}
	}
	if entity != nil {
		if res, done, err := s.advanceOrder(ctx, req, entity, now, fence); done || err != nil {
			return res, err
		}
	} else if err := ctxErr(ctx, "claim", req.Key); err != nil {
		return idemstore.ClaimResult{}, err
	}
	nr := idemstore.Record{
		Key:         req.Key,
		State:       idemstore.StateInProgress,
		Owner:       req.Owner,
		Fence:       fence + 1,
		Fingerprint: req.Fingerprint,
		LeaseUntil:  now.Add(req.Lease),
		UpdatedAt:   now,
		ClaimedAt:   now,
		Steps:       steps,
	}
	nr.ExpiresAt = nr.LeaseUntil.Add(req.TTL)
	if err := s.write("claim", p, &nr); err != nil {
		return idemstore.ClaimResult{}, err
	}
	return idemstore.ClaimResult{Status: status, Fence: nr.Fence, LeaseUntil: nr.LeaseUntil, Steps: steps}, nil
}

// advanceOrder checks an ordered claim against its entity's order record
// and, when it is in order, moves the entity forward to the claim's event
// time; done is true when the claim is out of order (res says so). The
// caller holds the entity's lock; fence is the record's current fence.
func (s *Store) advanceOrder(ctx context.Context, req *idemstore.ClaimRequest, entity *paths, now time.Time, fence uint64) (res idemstore.ClaimResult, done bool, err error) {
	o, found, err := s.readOrder(entity, req.Order.Key)
	if err != nil {
		return res, false, err
	}
	at := req.Order.At
	if found && now.Before(o.expiresAt) {
		if !req.Order.Override && at.Before(o.last.Add(-req.Order.Grace)) {
			return idemstore.ClaimResult{Status: idemstore.ClaimOutOfOrder, Fence: fence, LastAccepted: o.last}, true, nil
		}
		if o.last.After(at) {
			at = o.last // only ever forward, even for an override
		}
	}
	if err := ctxErr(ctx, "claim", req.Key); err != nil {
		return res, false, err
	}
	// The entity advances before the claim lands: a crash between the two
	// leaves the entity ahead, which can only reject more.
	order := &orderRecord{key: req.Order.Key, last: at, expiresAt: now.Add(max(req.TTL, req.Lease))}
	return res, false, s.replace("order", entity, entity.ord, encodeOrder(order))
}

func (s *Store) lockErr(ctx context.Context, op, key string, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("filestore: %s %q: waiting for the key lock: %w", op, key, err)
	}
	return err
}

// update runs one fenced read-modify-write under the key lock: the record
// must be in progress and owned by l (owner and fence), else ErrLeaseLost.
func (s *Store) update(ctx context.Context, op string, l idemstore.Lease, change func(r *idemstore.Record, now time.Time) error) error {
	if err := ctxErr(ctx, op, l.Key); err != nil {
		return err
	}
	p := s.paths(l.Key)
	kl, err := s.lock(ctx, &p)
	if err != nil {
		return s.lockErr(ctx, op, l.Key, err)
	}
	defer kl.unlock()
	hook(op, "locked")
	r, ok, err := s.read(&p, l.Key)
	if err != nil {
		return err
	}
	if !ok || r.State != idemstore.StateInProgress || r.Owner != l.Owner || r.Fence != l.Fence {
		return fmt.Errorf("filestore: %s %q: %w (fence %d)", op, l.Key, idem.ErrLeaseLost, l.Fence)
	}
	if err := ctxErr(ctx, op, l.Key); err != nil {
		return err
	}
	now := s.now()
	if err := change(&r, now); err != nil {
		return err
	}
	r.UpdatedAt = now
	return s.write(op, &p, &r)
}

// Heartbeat implements idemstore.Store: it renews the lease to now + l.Duration.
func (s *Store) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	return s.update(ctx, "heartbeat", l, func(r *idemstore.Record, now time.Time) error {
		keep := r.ExpiresAt.Sub(r.LeaseUntil)
		r.LeaseUntil = now.Add(l.Duration)
		r.ExpiresAt = r.LeaseUntil.Add(keep)
		return nil
	})
}

func (s *Store) finish(ctx context.Context, op string, l idemstore.Lease, state idemstore.State, data []byte) error {
	if len(data) > maxResult {
		return fmt.Errorf("filestore: %s %q: result of %d bytes exceeds the %d-byte limit", op, l.Key, len(data), maxResult)
	}
	return s.update(ctx, op, l, func(r *idemstore.Record, now time.Time) error {
		if n := len(data) + stepsSize(r.Steps); n > maxResult {
			return fmt.Errorf("filestore: %s %q: result of %d bytes and steps of %d exceed the %d-byte limit: %w", op, l.Key, len(data), n-len(data), maxResult, idem.ErrResultTooLarge)
		}
		r.State = state
		r.Result = data
		r.ExpiresAt = now.Add(l.TTL)
		return nil
	})
}

// stepsSize is what steps take in a record file.
func stepsSize(steps map[string][]byte) int {
	n := 0
	for name, data := range steps {
		n += len(name) + len(data) + 8
	}
	return n
}

// CheckStepName refuses a step name that alone makes a record larger
// than a record file holds. The Guard calls it before the step's function
// runs (see idemstore.Stepper).
func (s *Store) CheckStepName(name string) error {
	if n := len(name) + 8; n > maxResult {
		return fmt.Errorf("filestore: a %d-byte step name takes %d bytes of a record, over the %d-byte limit", len(name), n, maxResult)
	}
	return nil
}

// SaveStep implements idemstore.Stepper: the step goes into the record's file,
// in the same fenced, atomic rewrite as a Complete.
func (s *Store) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	return s.update(ctx, "step", l, func(r *idemstore.Record, now time.Time) error {
		if _, ok := r.Steps[name]; ok {
			return nil
		}
		if size := len(r.Result) + stepsSize(r.Steps) + len(name) + len(data) + 8; size > maxResult {
			return fmt.Errorf("filestore: step %q of %q: %w: the record would hold %d bytes, over the %d-byte limit", name, l.Key, idem.ErrResultTooLarge, size, maxResult)
		}
		r.Steps = maps.Clone(r.Steps)
		if r.Steps == nil {
			r.Steps = map[string][]byte{}
		}
		r.Steps[name] = data
		return nil
	})
}

// Complete implements idemstore.Store.
func (s *Store) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "complete", l, idemstore.StateCompleted, r.Data)
}

// Fail implements idemstore.Store.
func (s *Store) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "fail", l, idemstore.StateFailed, r.Data)
}

// Release implements idemstore.Store. The record keeps its fence.
func (s *Store) Release(ctx context.Context, l idemstore.Lease) error {
	return s.finish(ctx, "release", l, idemstore.StateReleased, nil)
}

// Get implements idemstore.Store with one unlocked read.
func (s *Store) Get(ctx context.Context, key string) (idemstore.Record, error) {
	if err := ctxErr(ctx, "get", key); err != nil {
		return idemstore.Record{}, err
	}
	p := s.paths(key)
	r, ok, err := s.read(&p, key)
	if err != nil {
		return idemstore.Record{}, err
	}
	if !ok || !live(&r, s.now()) {
		return idemstore.Record{}, fmt.Errorf("filestore: get %q: %w", key, idem.ErrNotFound)
	}
	return r, nil
}

// Delete implements idemstore.Store. It removes the record file without decoding
// it, so it is also how an operator clears a corrupt record.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctxErr(ctx, "delete", key); err != nil {
		return err
	}
	p := s.paths(key)
	l, err := s.lock(ctx, &p)
	if err != nil {
		return s.lockErr(ctx, "delete", key, err)
	}
	defer l.unlock()
	if err := s.removeItems(&p); err != nil {
		return err
	}
	err = os.Remove(p.rec)
	found := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s.fsErr("removing record", p.rec, err)
	}
	if err := os.Remove(p.tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return s.fsErr("removing temp record", p.tmp, err)
	}
	if err := l.removeLockFile(&p); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("filestore: delete %q: %w", key, idem.ErrNotFound)
	}
	return s.syncDir(p.dir)
}

// Wait implements idemstore.Store by polling the record file (1ms, backing off
// to the poll interval): there is no cross-process notification to lose,
// and a read is cheap.
func (s *Store) Wait(ctx context.Context, key string) error {
	p := s.paths(key)
	delay := time.Millisecond
	var t *time.Timer
	defer stopTimer(&t)
	for {
		if err := ctxErr(ctx, "wait", key); err != nil {
			return err
		}
		r, ok, err := s.read(&p, key)
		if err != nil {
			return err
		}
		if !ok || r.State != idemstore.StateInProgress || !s.now().Before(r.LeaseUntil) {
			return nil
		}
		if err := pause(ctx, &t, delay); err != nil {
			return fmt.Errorf("filestore: wait %q: %w", key, err)
		}
		delay = min(delay*2, s.poll)
	}
}

// crashHook, when set (tests only), is called at named points of a write
// so a test process can SIGKILL itself there.
var crashHook func(point string)

func hook(op, point string) {
	if crashHook != nil {
		crashHook(op + "-" + point)
	}
}
