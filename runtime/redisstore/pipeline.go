package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipe is the transport of the store's claims and fenced writes (complete,
// fail, release, heartbeat): it coalesces the commands of many goroutines
// into pipelines, one network write (per Cluster node) for whatever is
// ready, without adding latency to a lone caller.
//
//   - Idle (nothing of the store's in flight): a command goes out on its
//     caller's goroutine exactly as without the pipe, bounded by its ctx
//     (Store.bounded).
//   - Busy: the command joins a queue, and a flusher goroutine sends the
//     queue as a single pipeline (go-redis's ClusterClient splits it by
//     node and follows MOVED/ASK per command); what arrives while that
//     pipeline is in flight makes up the next one. With 32 callers each
//     round trip then carries the commands of most of them, where without
//     the pipe each caller paid its own round trip and the connection pool
//     serialised them. Up to maxFlushers pipelines are in flight at once.
//
// Each caller waits for its reply or its own ctx, whichever comes first,
// as Store.bounded does: a caller given up at its ctx sees ctx's error and
// its command's effect is unknown, as for any timeout; a command whose ctx
// ended before its pipeline was written is not sent. The pipeline's own
// I/O runs under the latest deadline of its commands when every one has a
// deadline and the client honours deadlines (ContextTimeoutEnabled), and
// otherwise under the client's own timeouts, so no caller's short deadline
// fails the others'. go-redis's retries of a pipeline resend its commands:
// the scripts and the SET NX GET recognise their own op ids, as they do
// for a single command's retry.
type pipe struct {
	s   *Store
	rdb redis.UniversalClient

	mu       sync.Mutex
	direct   int // commands sent on their caller's goroutine, in flight
	flushers int // flush goroutines running, at most maxFlushers
	// maxFlushers is the constant's value; the benchmarks set it to 1
	// to measure what the second flusher earns.
	maxFlushers int
	queue       []*pending
	spare       []*pending // the previous batch's slice, reused
}

// maxFlushers is how many pipelines may be in flight at once. With one,
// a command that arrives just after a pipeline left waits for that whole
// round trip before its own is sent, and then for its own: about two
// round trips of latency at any load that keeps the pipe busy, while the
// connection and the server sit idle between the reply and the next
// write. A second flusher sends it at once on another connection, which
// shortens that wait (BenchmarkFirstExecution's maxFlushers=1 variants,
// docs/BENCHMARKS.md); more than two add connections and smaller
// pipelines for little: a command waits at most for the shorter of two
// round trips already.
const maxFlushers = 2

// pending is one queued command.
type pending struct {
	ctx  context.Context
	cmd  redis.Cmder
	done chan struct{} // closed once cmd has its reply (or error)
}

// WithPipelining turns the coalescing of concurrent claims and writes into
// pipelines on or off (default on). Off, every call is its own round trip.
func WithPipelining(on bool) Option {
	return func(c *config) { c.noPipe = !on }
}

// piped runs call, which runs a script through c, bounded by ctx: through
// the pipe, which bounds each command by its ctx itself, or, with
// pipelining off, on the client under Store.bounded. A Cluster's refusal
// while the key's slot moves is tried again (Store.untilSlotSettled).
func (s *Store) piped(ctx context.Context, call func(c redis.Scripter) error) error {
	return s.untilSlotSettled(ctx, func() error {
		if s.pipe == nil {
			return s.bounded(ctx, func() error { return call(s.rdb) })
		}
		return call(s.pipe)
	})
}

// process sends cmd through the pipe (or directly when pipelining is off)
// and returns its error, or ctx's error as soon as ctx is done; cmd may be
// read only when the error is nil or a reply's. Like piped, it tries a
// command again that a Cluster refused while its slot moves.
func (s *Store) process(ctx context.Context, cmd redis.Cmder) error {
	return s.untilSlotSettled(ctx, func() error {
		if s.pipe == nil {
			return s.bounded(ctx, func() error { return s.rdb.Process(ctx, cmd) })
		}
		return s.pipe.process(ctx, cmd)
	})
}

func (p *pipe) process(ctx context.Context, cmd redis.Cmder) error {
	p.mu.Lock()
	if p.direct == 0 && p.flushers == 0 {
		p.direct++
		p.mu.Unlock()
		err := p.s.bounded(ctx, func() error { return p.rdb.Process(ctx, cmd) })
		p.mu.Lock()
		p.direct--
		p.mu.Unlock()
		return err
	}
	w := &pending{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	p.queue = append(p.queue, w)
	if p.flushers < p.maxFlushers {
		p.flushers++
		go p.flush()
	}
	p.mu.Unlock()
	select {
	case <-w.done:
		return cmd.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush sends the queue as pipelines until it finds it empty.
func (p *pipe) flush() {
	for {
		p.mu.Lock()
		batch := p.queue
		if len(batch) == 0 {
			p.flushers--
			p.mu.Unlock()
			return
		}
		p.queue, p.spare = p.spare[:0], nil
		p.mu.Unlock()
		p.send(batch)
		clear(batch)
		p.mu.Lock()
		p.spare = batch[:0]
		p.mu.Unlock()
	}
}

// send writes batch as one pipeline and hands each command its reply.
func (p *pipe) send(batch []*pending) {
	live := make([]redis.Cmder, 0, len(batch))
	var latest time.Time
	allDeadlines := p.s.honoursDeadline
	for _, w := range batch {
		if err := w.ctx.Err(); err != nil {
			// Its caller has gone (or is going) with ctx's error: do
			// not send what nobody waits for.
			w.cmd.SetErr(err)
			continue
		}
		live = append(live, w.cmd)
		if d, ok := w.ctx.Deadline(); ok {
			latest = later(latest, d)
		} else {
			allDeadlines = false
		}
	}
	if len(live) > 0 {
		ctx := context.Background()
		if allDeadlines {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, latest)
			defer cancel()
		}
		if len(live) == 1 {
			_ = p.rdb.Process(ctx, live[0])
		} else {
			pl := p.rdb.Pipeline()
			for _, c := range live {
				_ = pl.Process(ctx, c)
			}
			_, _ = pl.Exec(ctx) // each command carries its own error
		}
	}
	for _, w := range batch {
		close(w.done)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// eval runs EVAL or EVALSHA through the pipe. A caller given up at its ctx
// gets a command of its own holding ctx's error: the queued one may still
// be written to by the flusher.
func (p *pipe) eval(ctx context.Context, name, payload string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, payload, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // the slot of a Cluster
	}
	if err := p.process(ctx, cmd); err != nil && ctx.Err() != nil && err == ctx.Err() {
		gone := redis.NewCmd(ctx)
		gone.SetErr(err)
		return gone
	}
	return cmd
}

// The redis.Scripter methods, so go-redis's Script.Run (EVALSHA, then EVAL
// on NOSCRIPT) runs through the pipe.

func (p *pipe) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.eval(ctx, "eval", script, keys, args)
}

func (p *pipe) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.eval(ctx, "evalsha", sha1, keys, args)
}

func (p *pipe) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return p.eval(ctx, "eval_ro", script, keys, args)
}

func (p *pipe) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return p.eval(ctx, "evalsha_ro", sha1, keys, args)
}

func (p *pipe) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return p.rdb.ScriptExists(ctx, hashes...)
}

func (p *pipe) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return p.rdb.ScriptLoad(ctx, script)
}
