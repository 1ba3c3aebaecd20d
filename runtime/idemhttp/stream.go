package idemhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// Streamed responses: StreamHandler records a response a piece at a time
// with idem.Stream (its head, then each server-sent event, or what the
// handler wrote before each Flush), sends each piece as it is recorded,
// and gives a retry the same pieces, live while the first request runs or
// replayed after, from the event after its Last-Event-ID.

// StreamHandler wraps next, a handler that streams its response: server-
// sent events (Content-Type text/event-stream), or any body it flushes as
// it goes. It keys and fingerprints requests as Handler does; the first
// request runs next, and what next writes is recorded and sent a piece at
// a time, each piece once it is recorded. A request with the same key
// while next runs gets every piece from the first, then the live ones; one
// after it finished gets the recorded pieces. Next runs once, and goes on
// to the end when its client disconnects (WithClientCancel does not apply:
// it stops if nobody reads it for a whole lease), so a client that
// reconnects gets the rest.
//
// For text/event-stream the pieces are events (ended by a blank line,
// "\n\n" or "\r\n\r\n"), and the middleware gives each an id: line of its
// own (the handler's ids are overridden), "<run>-<n>". A reconnecting
// EventSource sends the last one back as Last-Event-ID, and its request
// gets the events after it. If the run it names died before it finished
// (its process was killed), the stream was produced again from the start:
// the response then begins with an event of type "idem-restart", after
// which the events of the new run come from the first; a client discards
// what it showed of the old run. The same event marks a restart in the
// middle of a response.
//
// A status the middleware does not record (5xx, 408 and 429 by default;
// WithRecordIf) makes the whole response go to the first client only, as
// Handler does, and releases the key. A body longer than
// WithMaxResponseBytes is recorded up to the limit and ends there for
// every client: an event stream with an event of type "idem-error", any
// other body by an aborted connection. The store must keep streams
// (idemstore.Streamer: memory, file, Redis, PostgreSQL).
func (m *Middleware) StreamHandler(next http.Handler) http.Handler {
	spec := m.spec
	spec.Codec = pieceCodec
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serveStream(w, r, next, &spec)
	})
}

// piece is one item of a recorded response: its head first (Status set),
// then its body a piece at a time; Cut marks the end of a body cut short
// at WithMaxResponseBytes.
type piece struct {
	Status int
	Header http.Header
	Data   []byte
	Cut    bool
}

// pieceCodec records pieces with the generated codecs' encoding, so that
// a body is stored as is (JSON would double it in base64).
var pieceCodec = idemimpl.Codec(
	func(e *idemimpl.Encoder, p *piece) {
		e.Int(int64(p.Status))
		if p.Status != 0 {
			h, err := json.Marshal(p.Header)
			e.Marshaled(h, err)
		}
		e.Bytes(p.Data)
		e.Bool(p.Cut)
	},
	func(d *idemimpl.Decoder, p *piece) {
		p.Status = int(d.Int(32))
		if p.Status != 0 {
			d.Unmarshaled(json.Unmarshal(d.Marshaled(), &p.Header))
		}
		p.Data = d.Bytes()
		p.Cut = d.Bool()
	},
)

// maxStreamRuns bounds how many runs one request follows: each restart
// is a run that died, so a handful means a stream that cannot finish.
const maxStreamRuns = 4

func (m *Middleware) serveStream(w http.ResponseWriter, r *http.Request, next http.Handler, spec *idem.Spec) {
	vals := r.Header.Values(KeyHeader)
	if !m.cfg.methods[r.Method] || len(vals) == 0 && m.cfg.optional {
		next.ServeHTTP(w, r)
		return
	}
	var buf bytes.Buffer // not pooled: the handler may outlive the request
	key, principal, body, ok := m.prepare(w, r, vals, &buf)
	if !ok {
		return
	}
	// The ranging ends with the client; the handler does not (it runs
	// under the stream's own ctx, see idem.Stream), and a reconnecting
	// client gets the rest.
	ctx := r.Context()
	out := &streamOut{m: m, w: w, r: r, key: key}
	out.cur.Run, out.skip = lastEventID(r.Header.Get("Last-Event-ID"))
	for range maxStreamRuns {
		c := m.begin(spec, r, key, principal, body)
		var ran atomic.Bool
		var live atomic.Pointer[http.Header]
		seq := idem.Stream(idem.StreamFrom(ctx, &out.cur), c, func(ctx context.Context, yield func(piece) bool) error {
			ran.Store(true)
			return m.produce(ctx, r, body, next, yield, &live)
		})
		again := out.follow(seq, &ran, &live)
		if !again {
			return
		}
	}
	out.fail(fmt.Errorf("%w: the stream restarted %d times", idem.ErrStoreUnavailable, maxStreamRuns))
}

// lastEventID reads an event ID the middleware gave ("<run>-<n>"): the
// run, and how many pieces of it the client has (the head and events 1
// to n). Anything else starts from the beginning.
func lastEventID(id string) (run, have uint64) {
	a, b, ok := strings.Cut(id, "-")
	if !ok {
		return 0, 0
	}
	run, err1 := strconv.ParseUint(a, 10, 64)
	n, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || run == 0 || n == 0 {
		return 0, 0
	}
	return run, n + 1
}

// produce runs next as the stream's producer: what it writes is yielded
// a piece at a time (streamWriter). A status that is not recorded ends
// the run with an *unrecordedError holding the whole response.
func (m *Middleware) produce(ctx context.Context, r *http.Request, body []byte, next http.Handler, yield func(piece) bool, live *atomic.Pointer[http.Header]) error {
	r2 := r.Clone(ctx)
	r2.Body = http.NoBody
	if len(body) > 0 {
		r2.Body = newBody(body)
		r2.GetBody = func() (io.ReadCloser, error) { return newBody(body), nil }
	}
	sw := &streamWriter{m: m, header: make(http.Header), yield: yield, live: live}
	next.ServeHTTP(sw, r2)
	return sw.end()
}

func newBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// unrecordedError ends a run whose status is not recorded: its response
// goes to the first client only, and the key is released.
type unrecordedError struct {
	resp *response
	live http.Header
}

func (e *unrecordedError) Error() string {
	return fmt.Sprintf("idemhttp: a %d response is not recorded", e.resp.Status)
}

// streamWriter is a streamed handler's ResponseWriter: it yields the head
// at WriteHeader, then each complete event of an event stream, or what
// was written before each Flush (and at the end) of any other body. A
// status that is not recorded sends it all to a recorder instead.
type streamWriter struct {
	m       *Middleware
	header  http.Header
	yield   func(piece) bool
	live    *atomic.Pointer[http.Header]
	wrote   bool
	sse     bool
	held    *recorder // a response that is not recorded
	buf     bytes.Buffer
	size    int64
	stopped bool // yield said stop, or the body reached its limit
}

var errStreamStopped = errors.New("idemhttp: the response stream is not recorded any further")

func (sw *streamWriter) Header() http.Header { return sw.header }

func (sw *streamWriter) WriteHeader(code int) {
	switch {
	case sw.wrote || sw.held != nil:
		return
	case code < 100 || code > 999 || code == http.StatusSwitchingProtocols || code >= 200 && !sw.m.cfg.record(code):
		sw.held = getRecorder(sw.m.cfg.maxResponse)
		sw.held.header = sw.header
		sw.held.WriteHeader(code)
		return
	case code < 200:
		return // informational responses are not part of the outcome
	}
	sw.wrote = true
	h, live := recordedHeader(sw.header.Clone(), sw.m.cfg.replayed)
	if live != nil {
		sw.live.Store(&live)
	}
	sw.sse = isEventStream(h)
	sw.put(piece{Status: code, Header: h})
}

// put yields p, unless the stream was stopped.
func (sw *streamWriter) put(p piece) {
	if !sw.stopped && !sw.yield(p) {
		sw.stopped = true
	}
}

func (sw *streamWriter) Write(b []byte) (int, error) {
	if !sw.wrote && sw.held == nil {
		sw.WriteHeader(http.StatusOK)
	}
	if sw.held != nil {
		return sw.held.Write(b)
	}
	if sw.stopped {
		return 0, errStreamStopped
	}
	if sw.size+int64(len(b)) > sw.m.cfg.maxResponse {
		sw.flushEvents()
		sw.put(piece{Data: bytes.Clone(sw.buf.Bytes()), Cut: true})
		sw.stopped = true
		return 0, ErrResponseTooLarge
	}
	sw.size += int64(len(b))
	sw.buf.Write(b)
	if sw.sse {
		sw.flushEvents()
	}
	if sw.stopped {
		return 0, errStreamStopped
	}
	return len(b), nil
}

// Flush records what was written since the last piece (for an event
// stream, only complete events are pieces).
func (sw *streamWriter) Flush() {
	if !sw.wrote && sw.held == nil {
		sw.WriteHeader(http.StatusOK)
	}
	if sw.held == nil && !sw.sse && sw.buf.Len() > 0 {
		sw.put(piece{Data: bytes.Clone(sw.buf.Bytes())})
		sw.buf.Reset()
	}
}

// flushEvents yields each complete event in buf.
func (sw *streamWriter) flushEvents() {
	for {
		n := eventEnd(sw.buf.Bytes())
		if n < 0 {
			return
		}
		sw.put(piece{Data: bytes.Clone(sw.buf.Next(n))})
	}
}

// end finishes the response once the handler returned.
func (sw *streamWriter) end() error {
	if sw.held != nil {
		defer putRecorder(sw.held)
		if sw.held.invalid {
			return &unrecordedError{resp: sw.m.problemResponse(http.StatusInternalServerError, CodeInvalidStatus,
				fmt.Sprintf("the handler answered with status %d, which cannot be sent or replayed", sw.held.status), "")}
		}
		resp, live := sw.held.response(sw.m.cfg.replayed)
		return &unrecordedError{resp: resp, live: live}
	}
	if !sw.wrote {
		sw.WriteHeader(http.StatusOK)
	}
	if sw.buf.Len() > 0 {
		sw.put(piece{Data: bytes.Clone(sw.buf.Bytes())})
	}
	return nil
}

// eventEnd is the length of buf's first complete event (with the blank
// line that ends it), or -1.
func eventEnd(buf []byte) int {
	lf := bytes.Index(buf, []byte("\n\n"))
	crlf := bytes.Index(buf, []byte("\r\n\r\n"))
	switch {
	case crlf >= 0 && (lf < 0 || crlf < lf):
		return crlf + 4
	case lf >= 0:
		return lf + 2
	}
	return -1
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// streamOut sends a streamed response to one client.
type streamOut struct {
	m        *Middleware
	w        http.ResponseWriter
	r        *http.Request
	key      string
	cur      idem.StreamCursor
	skip     uint64 // pieces 1 to skip-1 of run cur.Run the client has
	sse      bool
	headSent bool
	sent     bool // this response sent events or body
	owed     bool // an idem-restart event is owed: the client had pieces of a run that died
	abort    bool // end the response by aborting the connection
}

// follow sends what one ranging of the stream yields; true: its run
// restarted, and the request follows the next.
func (o *streamOut) follow(seq iter.Seq2[piece, error], ran *atomic.Bool, live *atomic.Pointer[http.Header]) bool {
	for p, err := range seq {
		if errors.Is(err, idem.ErrStreamRestarted) {
			o.owed, o.skip = o.sent || o.skip > 0, 0
			return true
		}
		if err != nil {
			o.fail(err)
			break
		}
		switch n := o.cur.Next - 1; {
		case n == 0 && !o.headSent:
			o.head(p, !ran.Load(), live.Load())
		case n == 0 || o.sse && n < o.skip:
		default:
			o.data(p, n)
		}
		if o.abort {
			break
		}
	}
	if o.abort {
		panic(http.ErrAbortHandler) // a body cut short must not look whole
	}
	return false
}

// head sends the response's status and header; replay marks a client
// that did not run the handler.
func (o *streamOut) head(p piece, replay bool, live *http.Header) {
	h := o.w.Header()
	addHeaders(h, p.Header)
	if live != nil && !replay {
		addHeaders(h, *live)
	}
	if replay {
		h.Set(o.m.cfg.replayHeader, "true")
	}
	o.sse = isEventStream(p.Header)
	o.w.WriteHeader(p.Status)
	o.headSent = true
	o.restarted()
	o.flush()
}

// restarted tells a client that had pieces of a run that died, if it is
// owed that, that what follows is a new run from its start.
func (o *streamOut) restarted() {
	if !o.owed {
		return
	}
	o.owed = false
	switch {
	case o.sse:
		fmt.Fprintf(o.w, "event: idem-restart\ndata: the stream was produced again from its start\n\n")
	case o.sent:
		o.abort = true // a body cannot say so: it must not be spliced
	}
}

// data sends piece n of the body: an event, with the middleware's id.
func (o *streamOut) data(p piece, n uint64) {
	o.restarted() // after a restart in the middle of this response
	if o.abort {
		return
	}
	o.sent = true
	d := p.Data
	if o.sse && len(d) > 0 {
		d = withID(d, o.cur.Run, n)
	}
	o.w.Write(d) //nolint:errcheck // the client is gone; the stream goes on without it
	if p.Cut {
		if o.sse {
			fmt.Fprintf(o.w, "event: idem-error\ndata: %s\n\n", CodeResponseTooLarge)
		} else {
			o.abort = true
		}
	}
	o.flush()
}

// withID gives an event the id "<run>-<n>", after the handler's fields
// (the last id field is the one a client keeps).
func withID(ev []byte, run, n uint64) []byte {
	id := "id: " + strconv.FormatUint(run, 10) + "-" + strconv.FormatUint(n, 10)
	out := make([]byte, 0, len(ev)+len(id)+4)
	switch {
	case bytes.HasSuffix(ev, []byte("\r\n\r\n")):
		return append(append(append(out, ev[:len(ev)-2]...), id...), "\r\n\r\n"...)
	case bytes.HasSuffix(ev, []byte("\n\n")):
		return append(append(append(out, ev[:len(ev)-1]...), id...), "\n\n"...)
	}
	return ev // an event the handler left unfinished at its end
}

func (o *streamOut) flush() {
	http.NewResponseController(o.w).Flush() //nolint:errcheck // a writer that cannot flush sends at the end
}

// fail ends the response with err: as Handler answers, if nothing was
// sent yet; else the response ends (an event stream's client reconnects
// with its Last-Event-ID), or is aborted.
func (o *streamOut) fail(err error) {
	var u *unrecordedError
	switch {
	case o.headSent:
		o.abort = !o.sse
	case errors.As(err, &u):
		addHeaders(o.w.Header(), u.live)
		writeResponse(o.w, u.resp, false, "")
	default:
		o.m.answer(o.w, o.r, o.key, nil, nil, false, err)
	}
}
