// Package idemgrpc applies idempotency keys to gRPC: a unary server
// interceptor that runs a method once per idempotency-key metadata entry
// and replays the recorded response to retries, a stream server
// interceptor that does the same for server-streaming methods (message by
// message, resumable from an offset), and a unary client interceptor that
// gives each logical call a key its retries share.
//
// Server:
//
//	g := idem.NewGuard(store) // any idemstore.Store
//	s, err := idemgrpc.NewServer(g, idemgrpc.WithPrincipal(func(ctx context.Context) (string, error) {
//		return auth.ClientID(ctx) // who is calling
//	}))
//	if err != nil { ... }
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(s.UnaryInterceptor()),
//		grpc.ChainStreamInterceptor(s.StreamInterceptor()),
//	)
//
// Client:
//
//	conn, err := grpc.NewClient(target,
//		grpc.WithChainUnaryInterceptor(idemgrpc.UnaryClientInterceptor()), // first: outside any retry interceptor
//		grpc.WithDefaultServiceConfig(retryPolicy),                        // grpc's own retries re-send the key
//	)
//
// The semantics, status codes and their reasons are in docs/GRPC.md.
package idemgrpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemkey"
	"github.com/idemgen/idemgen/runtime/internal/adapter"
)

// MetadataKey is the metadata entry that carries the idempotency key.
const MetadataKey = "idempotency-key"

// ReplayMetadataKey is the response header metadata entry set to "true" on
// a replayed response.
const ReplayMetadataKey = "idempotent-replayed"

// ErrorDomain is the domain of the google.rpc.ErrorInfo detail attached to
// the interceptor's own errors.
const ErrorDomain = "idemgen.idemgrpc"

// The reasons of the interceptor's ErrorInfo details.
const (
	ReasonKeyMissing       = "IDEMPOTENCY_KEY_MISSING"
	ReasonKeyMalformed     = "IDEMPOTENCY_KEY_MALFORMED"
	ReasonKeyReused        = "IDEMPOTENCY_KEY_REUSED"
	ReasonInProgress       = "REQUEST_IN_PROGRESS"
	ReasonStoreUnavailable = "IDEMPOTENCY_STORE_UNAVAILABLE"
	ReasonLeaseLost        = "LEASE_LOST"
	ReasonPrincipalUnknown = "PRINCIPAL_UNKNOWN"
	ReasonStreamingKey     = "IDEMPOTENCY_KEY_ON_STREAM"
	ReasonInternal         = "IDEMPOTENCY_ERROR"
)

// Server holds the interceptors' configuration. Build it with NewServer;
// it is safe for concurrent use.
type Server struct {
	g    *idem.Guard
	spec idem.Spec
	cfg  config
}

// NewServer returns a Server over g. It needs a principal function
// (WithPrincipal) or an explicit WithoutPrincipal, as idemhttp does: keys
// are scoped by the principal, so that one client can never replay
// another's response.
func NewServer(g *idem.Guard, opts ...Option) (*Server, error) {
	cfg, err := adapter.Configure("idemgrpc", "NewServer", g, defaultConfig(), opts, (*config).check)
	if err != nil {
		return nil, err
	}
	spec, err := adapter.Spec("idemgrpc", DefaultName, cfg.call)
	if err != nil {
		return nil, err
	}
	return &Server{g: g, spec: spec, cfg: cfg}, nil
}

// outcome is what is recorded for a key: the response message (as an
// Any, so a replay rebuilds its type from the registry), or the status of
// an error WithRecordCodes accepts.
type outcome struct {
	Response []byte `json:"r,omitempty"` // anypb.Any, binary
	Status   []byte `json:"s,omitempty"` // google.rpc.Status, binary
}

// errUnrecorded marks a handler error that is returned but not recorded:
// returning it from the guarded function makes idem.Do release the key.
var errUnrecorded = errors.New("idemgrpc: error not recorded")

// UnaryInterceptor returns the unary server interceptor.
func (s *Server) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return s.intercept
}

func (s *Server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !s.cfg.guarded(info.FullMethod) {
		return handler(ctx, req)
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(MetadataKey)
	if len(vals) == 0 && !s.cfg.required(info.FullMethod) {
		return handler(ctx, req)
	}
	key, principal, err := s.identify(ctx, vals)
	if err != nil {
		return nil, err
	}
	msg, ok := req.(proto.Message)
	if !ok {
		return nil, s.statusError(codes.Internal, ReasonInternal,
			fmt.Sprintf("the request of %s is a %T, not a proto message: it cannot be fingerprinted", info.FullMethod, req), 0)
	}
	c, err := s.begin(&s.spec, key, principal, info.FullMethod, msg)
	if err != nil {
		return nil, err
	}
	runCtx := ctx
	if !s.cfg.clientCancel {
		runCtx = context.WithoutCancel(ctx)
	}
	ran := false
	var live any      // the handler's own response value, for the first caller
	var liveErr error // the handler's error, returned as is
	out, err := idem.Do(runCtx, c, func(ctx context.Context) (*outcome, error) {
		ran = true
		live, liveErr = handler(ctx, req)
		return s.record(live, liveErr)
	})
	if ran && (err == nil || errors.Is(err, errUnrecorded) || errors.Is(err, idem.ErrStoreUnavailable)) {
		// This call ran the handler: its caller gets what the handler
		// said, recorded or not (an unrecorded error, or a record the
		// store could not take).
		return live, liveErr
	}
	if err == nil {
		return s.replay(ctx, out)
	}
	return nil, s.refusal(ctx, err)
}

// begin starts a guarded call of spec: its key is the principal, the
// method and the idempotency-key, its payload the method and the request.
func (s *Server) begin(spec *idem.Spec, key, principal, method string, req proto.Message) (idem.Call, error) {
	reqBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return idem.Call{}, s.statusError(codes.Internal, ReasonInternal, "the request could not be fingerprinted", 0)
	}
	c, m := idemimpl.Begin(s.g, spec)
	kb := m.Key()
	kb.String(principal)
	kb.String(method)
	kb.ID(key)
	pb := m.Payload()
	pb.String(method)
	adapter.WriteBody(pb, reqBytes)
	return c, nil
}

// identify reads the call's key and its client's principal; the error is
// the status that refuses the call when either is missing or wrong.
func (s *Server) identify(ctx context.Context, vals []string) (key, principal string, err error) {
	if len(vals) == 0 {
		return "", "", s.statusError(codes.InvalidArgument, ReasonKeyMissing,
			"this method requires an "+MetadataKey+" metadata entry", 0)
	}
	key, err = idemkey.Parse(vals)
	if err != nil {
		return "", "", s.statusError(codes.InvalidArgument, ReasonKeyMalformed,
			"malformed "+MetadataKey+": "+err.Error(), 0)
	}
	principal, err = adapter.Principal(s.cfg.principal, ctx)
	if err != nil {
		return "", "", s.statusError(codes.Unauthenticated, ReasonPrincipalUnknown,
			"the client of this call could not be identified: "+err.Error(), 0)
	}
	return key, principal, nil
}

// record is what is recorded of the handler's answer: its response, or
// the status of an error WithRecordCodes accepts; errUnrecorded for the
// rest, which releases the key.
func (s *Server) record(resp any, herr error) (*outcome, error) {
	if herr != nil {
		st := status.Convert(herr)
		if !s.cfg.record(st.Code()) {
			return nil, errUnrecorded
		}
		b, err := proto.Marshal(st.Proto())
		if err != nil {
			return nil, errUnrecorded
		}
		return &outcome{Status: b}, nil
	}
	m, ok := resp.(proto.Message)
	if !ok {
		return nil, errUnrecorded
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil, errUnrecorded
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(a)
	if err != nil {
		return nil, errUnrecorded
	}
	return &outcome{Response: b}, nil
}

// refusal is the status of a call idem.Do did not run nor replay.
func (s *Server) refusal(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, idem.ErrInProgress):
		return s.statusError(codes.Aborted, ReasonInProgress,
			"a call with the same "+MetadataKey+" is in progress; retry later with the same key", s.cfg.retryAfter)
	case errors.Is(err, idem.ErrPayloadMismatch):
		return s.statusError(codes.FailedPrecondition, ReasonKeyReused,
			"this "+MetadataKey+" was used with a different request (method or message); send a new key for a new request", 0)
	case errors.Is(err, idem.ErrInvalidKey):
		return s.statusError(codes.InvalidArgument, ReasonKeyMalformed, err.Error(), 0)
	case errors.Is(err, idem.ErrLeaseLost):
		return s.statusError(codes.Unavailable, ReasonLeaseLost,
			"the call's claim on its key was lost while it ran; retry with the same key", s.cfg.retryAfter)
	case errors.Is(err, idem.ErrStoreUnavailable):
		return s.statusError(codes.Unavailable, ReasonStoreUnavailable,
			"the call was not processed; retry with the same key", s.cfg.retryAfter)
	case ctx.Err() != nil:
		return status.FromContextError(ctx.Err()).Err()
	default:
		// Store and codec errors stay server-side (the Guard's observer
		// sees them): their text can name hosts and internals.
		return s.statusError(codes.Internal, ReasonInternal, "the call could not be checked for duplicates", 0)
	}
}

// replay returns a recorded outcome, marking it with the replay header.
func (s *Server) replay(ctx context.Context, out *outcome) (any, error) {
	// A failure to set the header (no transport stream in ctx, as when the
	// interceptor is called directly) does not stop the replay.
	grpc.SetHeader(ctx, metadata.Pairs(ReplayMetadataKey, "true")) //nolint:errcheck
	if out == nil {
		return nil, s.statusError(codes.Internal, ReasonInternal, "the recorded outcome is empty", 0)
	}
	if len(out.Status) > 0 {
		var st spb.Status
		if err := proto.Unmarshal(out.Status, &st); err != nil {
			return nil, s.statusError(codes.Internal, ReasonInternal, "the recorded status could not be decoded", 0)
		}
		return nil, status.FromProto(&st).Err()
	}
	var a anypb.Any
	if err := proto.Unmarshal(out.Response, &a); err != nil {
		return nil, s.statusError(codes.Internal, ReasonInternal, "the recorded response could not be decoded", 0)
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, s.statusError(codes.Internal, ReasonInternal,
			"the recorded response's type "+string(a.MessageName())+" is not registered in this server", 0)
	}
	return m, nil
}

// statusError builds the interceptor's own errors: the code, a message,
// an ErrorInfo with the reason, and a RetryInfo when retry > 0.
func (s *Server) statusError(code codes.Code, reason, msg string, retry time.Duration) error {
	st := status.New(code, msg)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}}
	if retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	}
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	}
	return st.Err()
}
