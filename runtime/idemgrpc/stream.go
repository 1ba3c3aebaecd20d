package idemgrpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// Server streams: a server-streaming call with an idempotency-key runs
// its method once (idem.Stream); every message it sends is recorded
// before it is sent, and a call with the same key gets the same messages,
// live while the first call runs or replayed after it, from an offset it
// names in ResumeMetadataKey.

// RunMetadataKey is the response header entry of a guarded server stream
// that names its run: the messages of one run are one stream. A client
// keeps it with the count of messages it received, to resume.
const RunMetadataKey = "idempotency-run"

// ResumeMetadataKey is the request metadata entry of a retried server
// stream that resumes: "<run>-<n>", the run of the header and the number
// of its messages received. The call then gets the messages after those.
// If that run died before it finished and the stream was produced again,
// the call gets the new run from its first message, under a header whose
// run differs: the client discards what it had.
const ResumeMetadataKey = "idempotency-resume"

// ReasonStreamRestarted is the reason of the codes.Aborted that ends a
// server stream whose run died in the middle: the client calls again,
// without ResumeMetadataKey, and discards what it received.
const ReasonStreamRestarted = "STREAM_RESTARTED"

// StreamInterceptor returns the stream server interceptor. A server-
// streaming call with an idempotency-key is guarded (see
// RunMetadataKey, ResumeMetadataKey): its method runs once per key, in
// the background of the first call, which gets each message once it is
// recorded; the method's messages are recorded as Any (their types must
// be in the protobuf registry, as generated types are), and its error as
// the unary interceptor records it (WithRecordCodes). The method must
// receive its request before anything else, as generated handlers do:
// the request is its fingerprint. Header and trailer metadata the method
// sets are not recorded: SetHeader and SendHeader return an error.
// Client- and bidirectional-streaming calls with a key are refused with
// codes.Unimplemented (they have no single request to key); calls
// without a key pass through untouched.
func (s *Server) StreamInterceptor() grpc.StreamServerInterceptor {
	spec := s.spec
	spec.Codec = itemCodec
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		vals := md.Get(MetadataKey)
		switch {
		case len(vals) == 0 || !s.cfg.guarded(info.FullMethod):
			return handler(srv, ss)
		case info.IsClientStream:
			return s.statusError(codes.Unimplemented, ReasonStreamingKey,
				"idempotency keys are not supported on client- or bidirectional-streaming RPCs ("+info.FullMethod+"); send the call without "+MetadataKey, 0)
		}
		key, principal, err := s.identify(ss.Context(), vals)
		if err != nil {
			return err
		}
		h := startHandler(s, srv, ss, handler)
		defer h.refuse()
		req, err := h.request()
		if err != nil {
			return err
		}
		out := &streamOut{s: s, ss: ss, h: h}
		out.cur.Run, out.cur.Next = resumeFrom(md.Get(ResumeMetadataKey))
		// The method runs on without the call (idem.Stream); each round
		// is a run that died before this call got any of it.
		ctx := ss.Context()
		for range 4 {
			c, err := s.begin(&spec, key, principal, info.FullMethod, req)
			if err != nil {
				return err
			}
			again, err := out.follow(idem.Stream(idem.StreamFrom(ctx, &out.cur), c, h.produce))
			if !again {
				return err
			}
		}
		return s.statusError(codes.Unavailable, ReasonStreamRestarted, "the stream restarted 4 times; retry", s.cfg.retryAfter)
	}
}

// item is one recorded message of a stream (an Any), or its recorded
// error (a google.rpc.Status), which ends it.
type item struct {
	Msg, Status []byte
}

var itemCodec = idemimpl.Codec(
	func(e *idemimpl.Encoder, it *item) { e.Bytes(it.Msg); e.Bytes(it.Status) },
	func(d *idemimpl.Decoder, it *item) { it.Msg, it.Status = d.Bytes(), d.Bytes() },
)

// resumeFrom reads ResumeMetadataKey: the cursor after n messages of run.
func resumeFrom(vals []string) (run, next uint64) {
	if len(vals) != 1 {
		return 0, 0
	}
	a, b, ok := strings.Cut(vals[0], "-")
	r, err1 := strconv.ParseUint(a, 10, 64)
	n, err2 := strconv.ParseUint(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || r == 0 {
		return 0, 0
	}
	return r, n
}

// streamOut sends a guarded stream's messages to one call.
type streamOut struct {
	s       *Server
	ss      grpc.ServerStream
	h       *handlerRun
	cur     idem.StreamCursor
	started bool // the header went out
	sent    bool // messages went out
}

// follow sends what one ranging of the stream yields, and returns the
// call's status; again: the run died before this call got any of it,
// and the call follows the next.
func (o *streamOut) follow(seq func(func(item, error) bool)) (again bool, err error) {
	for it, err := range seq {
		var herr *handlerError
		switch {
		case errors.Is(err, idem.ErrStreamRestarted) && !o.sent:
			return true, nil
		case errors.Is(err, idem.ErrStreamRestarted):
			return false, o.s.statusError(codes.Aborted, ReasonStreamRestarted,
				"the stream's run died and it is produced again from the start; call again without "+ResumeMetadataKey+" and discard what you received", 0)
		case errors.As(err, &herr):
			return false, herr.err // the method's own error, not recorded
		case err != nil:
			return false, o.s.refusal(o.ss.Context(), err)
		}
		o.header()
		if len(it.Status) > 0 {
			var st spb.Status
			if err := proto.Unmarshal(it.Status, &st); err != nil {
				return false, o.s.statusError(codes.Internal, ReasonInternal, "the recorded status could not be decoded", 0)
			}
			return false, status.FromProto(&st).Err()
		}
		var a anypb.Any
		if err := proto.Unmarshal(it.Msg, &a); err != nil {
			return false, o.s.statusError(codes.Internal, ReasonInternal, "a recorded message could not be decoded", 0)
		}
		m, err := a.UnmarshalNew()
		if err != nil {
			return false, o.s.statusError(codes.Internal, ReasonInternal,
				"the recorded message's type "+string(a.MessageName())+" is not registered in this server", 0)
		}
		if err := o.ss.SendMsg(m); err != nil {
			return false, err // the client is gone; the stream goes on being recorded
		}
		o.sent = true
	}
	o.header()
	return false, nil
}

// header sends the run's header before the first message (or the end).
func (o *streamOut) header() {
	if o.started {
		return
	}
	o.started = true
	md := metadata.Pairs(RunMetadataKey, strconv.FormatUint(o.cur.Run, 10))
	if !o.producing() {
		md.Set(ReplayMetadataKey, "true")
	}
	o.ss.SendHeader(md) //nolint:errcheck // the client is gone: SendMsg says so
}

// producing reports whether this call's method is the stream's.
func (o *streamOut) producing() bool {
	select {
	case <-o.h.decided:
		return o.h.run
	default:
		return false
	}
}

// handlerError is the method's error that is not recorded: the key is
// released, and the call that ran the method returns it as is.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return fmt.Sprintf("idemgrpc: the method failed: %v", e.err) }

// handlerRun runs a guarded stream's method in a goroutine of its own
// from the start, stopped in its first RecvMsg until the call knows
// whether it runs (produce) or not (refuse).
type handlerRun struct {
	s       *Server
	ss      grpc.ServerStream
	req     chan proto.Message // the request the method received
	decided chan struct{}      // closed by produce or refuse
	once    sync.Once
	run     bool            // produce: the method goes on
	ctx     context.Context // the method's ctx once it runs
	yield   func(item) bool
	done    chan struct{} // closed when the method returned
	err     error
}

func startHandler(s *Server, srv any, ss grpc.ServerStream, handler grpc.StreamHandler) *handlerRun {
	h := &handlerRun{s: s, ss: ss, req: make(chan proto.Message, 1), decided: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		h.err = handler(srv, &guardedStream{ServerStream: ss, h: h})
	}()
	return h
}

// request waits for the method's request: the first message it received.
func (h *handlerRun) request() (proto.Message, error) {
	select {
	case m := <-h.req:
		return m, nil
	case <-h.done:
		if h.err == nil {
			h.err = status.Error(codes.Internal, "the method returned before it received its request")
		}
		return nil, h.err
	}
}

// produce is the stream's function: it lets the method go on, its
// messages yielded, and waits for it. The method's error ends the
// stream: recorded if its code is (WithRecordCodes), else returned to
// this call only (handlerError), which releases the key.
func (h *handlerRun) produce(ctx context.Context, yield func(item) bool) error {
	h.once.Do(func() {
		h.run, h.ctx, h.yield = true, ctx, yield
		close(h.decided)
	})
	<-h.done
	if h.err == nil {
		return nil
	}
	st := status.Convert(h.err)
	if h.s.cfg.record(st.Code()) {
		if b, err := proto.Marshal(st.Proto()); err == nil {
			yield(item{Status: b})
			return nil
		}
	}
	return &handlerError{h.err}
}

// refuse stops a method that was not let run (its RecvMsg fails) and
// waits for it. One that runs goes on in the background, recorded for
// whoever attaches, when its call ends early (its client left).
func (h *handlerRun) refuse() {
	h.once.Do(func() { close(h.decided) })
	if !h.run {
		<-h.done
	}
}

// guardedStream is the method's view of its stream.
type guardedStream struct {
	grpc.ServerStream
	h        *handlerRun
	received bool
}

var errNotRecorded = errors.New("idemgrpc: a guarded server stream records its messages, not header metadata")

func (g *guardedStream) Context() context.Context {
	select {
	case <-g.h.decided:
		if g.h.run {
			return g.h.ctx
		}
	default:
	}
	return g.ServerStream.Context()
}

func (g *guardedStream) RecvMsg(m any) error {
	if g.received {
		return g.ServerStream.RecvMsg(m)
	}
	g.received = true
	if err := g.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "the request is a %T, not a proto message: it cannot be fingerprinted", m)
	}
	g.h.req <- pm
	<-g.h.decided
	if !g.h.run {
		return status.Error(codes.Aborted, "idemgrpc: this call is answered from another's run")
	}
	return nil
}

func (g *guardedStream) SendMsg(m any) error {
	select {
	case <-g.h.decided:
	default:
		return status.Error(codes.Internal, "idemgrpc: a guarded server stream's method must receive its request before it sends")
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "a message is a %T, not a proto message: it cannot be recorded", m)
	}
	a, err := anypb.New(pm)
	if err == nil {
		var b []byte
		if b, err = (proto.MarshalOptions{Deterministic: true}).Marshal(a); err == nil && !g.h.yield(item{Msg: b}) {
			err = status.Error(codes.Unavailable, "idemgrpc: the stream could not be recorded any further")
		}
	}
	return err
}

func (g *guardedStream) SetHeader(metadata.MD) error  { return errNotRecorded }
func (g *guardedStream) SendHeader(metadata.MD) error { return errNotRecorded }
func (g *guardedStream) SetTrailer(metadata.MD)       {}
