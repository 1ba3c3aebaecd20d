// Package filestore is a durable idemstore.Store kept in a directory: the
// embedded store for one machine whose guarded calls must survive restarts
// and be shared by several processes (cron jobs, CLIs, a few workers)
// without running a server.
//
//	st, err := filestore.New("/var/lib/myapp/idem")
//	if err != nil {
//		return err // e.g. the directory is not writable
//	}
//	g := idem.NewGuard(st)
//	// ... and, on a schedule (say hourly), drop expired records:
//	n, err := st.Cleanup(ctx)
//
// Every process that opens the same directory shares the same keys: a key
// runs once across all of them. The directory must be on a local
// filesystem (flock and rename semantics on NFS are not to be trusted).
// The package builds on Unix systems (Linux, macOS, the BSDs), not on
// Windows.
//
// # Layout
//
// A key is hashed with SHA-256 and its files live in a two-level fan-out
// directory named after the first four hex digits, so no directory holds
// more than a 65,536th of the keys and any key, whatever its bytes, makes a
// safe file name:
//
//	root/ab/cd/<sha256hex>.rec   the record (versioned, CRC-32C checked)
//	root/ab/cd/<sha256hex>.lock  empty; flock(2) target for the key
//	root/ab/cd/<sha256hex>.tmp   a record being written (under the lock)
//	root/ab/cd/<sha256hex>.ord   an ordering entity's last accepted time
//	root/ab/cd/<sha256hex>.items a stream's items (idem.Stream), one run's
//
// Directories are created 0700 and files 0600 (the umask can only narrow
// them): records hold results, which may be sensitive.
//
// # Atomicity and crash safety
//
// A claim, heartbeat, completion, failure or release is a read-modify-write
// of one record under the key's lock: an exclusive flock on the key's lock
// file, held only for that one operation (never while the guarded function
// runs: ownership during the run is the lease in the record). The kernel
// drops a flock when its holder dies, so a killed process never leaves a
// key locked; its claim simply runs out of lease and is taken over.
//
// A record is replaced by writing the key's temp file, fsyncing it,
// renaming it over the record and fsyncing the directory. Readers (replays,
// Get, Wait) take no lock: a rename swaps in the whole new file, so they
// see the old record or the new one. A replay is one open+read.
//
// The record format carries a magic, a format version and a checksum over
// the whole file. A file that does not decode (truncated, torn by a power
// loss with fsync off, edited, from an unknown format) is reported as
// idem.ErrCorruptRecord with its path, never taken for an absent key,
// because "absent" would run the function again. Store.Delete removes such
// a file; Cleanup leaves it in place and reports it.
//
// WithoutSync skips the fsyncs. That is safe against process crashes but
// not against power loss or a kernel crash; see its documentation.
//
// # Time, leases and fencing
//
// Leases and expiry are judged by the host clock (time.Now), which all
// processes on the host share; WithClock replaces it in tests. Fencing
// follows idemstore.Store: a record keeps its fence across release and expiry
// until Cleanup or Delete removes the file, and every new owner gets the
// previous fence + 1.
//
// # Ordering and administration
//
// The store implements idemstore.Orderer: an ordered claim locks the entity's
// files and then the key's (always in that order, so lockers cannot
// deadlock), checks and advances the entity's last accepted time, and
// claims, all under both locks. It implements idemstore.Admin too: List reads
// every record (keys are hashed on disk, so a prefix cannot narrow the
// walk), ForceRelease fences out a stuck owner, and Cleanup is below.
//
// # Waiting and expiry
//
// Wait polls the record (1ms backing off to WithPollInterval, default
// 20ms). Records are not removed when they expire: they stop being live
// (Get reports idem.ErrNotFound, Claim acquires) and Cleanup deletes them,
// along with expired ordering records and orphaned lock and temp files.
//
// # Cost
//
// A replay is one open+read of the record file (tens of microseconds); a
// first execution is two atomic replacements (claim, complete), each a
// temp-file write, two fsyncs (file, directory) and a rename: milliseconds
// to tens of milliseconds, set by the disk's flush latency. A heartbeat is
// one more replacement every lease/3. docs/BENCHMARKS.md has the numbers.
//
// # Errors
//
// A full disk (ENOSPC, EDQUOT) is reported as an error wrapping both
// idem.ErrStoreFull and the errno; replays keep working since they only
// read. A directory the process cannot write to is reported by New, or by
// the operation that hit it, naming the directory. Every error names the
// file involved and wraps the underlying error (a syscall.Errno for
// filesystem failures, so errors.Is works with fs.ErrPermission or
// syscall.ENOSPC).
package filestore
