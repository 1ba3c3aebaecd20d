package idemhttp_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// sseEvent is one event as a client parses it.
type sseEvent struct {
	ID, Type, Data string
}

// ticker is a streamed handler: n events, one every gap, counting runs.
type ticker struct {
	n    int
	gap  time.Duration
	runs atomic.Int32
	sse  bool
}

func (h *ticker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.runs.Add(1)
	if h.sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "text/plain")
	}
	for i := 1; i <= h.n; i++ {
		time.Sleep(h.gap)
		if h.sse {
			fmt.Fprintf(w, "id: mine\ndata: token %d\n\n", i)
		} else {
			fmt.Fprintf(w, "chunk %d;", i)
		}
		w.(http.Flusher).Flush()
	}
}

func streamServer(t *testing.T, h http.Handler, opts ...idemhttp.Option) *httptest.Server {
	t.Helper()
	mw, err := idemhttp.New(idem.NewGuard(memstore.New()), append([]idemhttp.Option{idemhttp.WithoutPrincipal()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw.StreamHandler(h))
	t.Cleanup(srv.Close)
	return srv
}

// post sends a keyed POST; lastID, if set, is its Last-Event-ID.
func post(t *testing.T, srv *httptest.Server, key, lastID string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/answer", strings.NewReader(`{"q":"why"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(idemhttp.KeyHeader, `"`+key+`"`)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// readEvents parses up to max events (all, if max < 0) from body.
func readEvents(t *testing.T, body io.Reader, max int) []sseEvent {
	t.Helper()
	var evs []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(body)
	for max < 0 || len(evs) < max {
		if !sc.Scan() {
			break
		}
		line := sc.Text()
		field, value, _ := strings.Cut(line, ": ")
		switch field {
		case "":
			if ev != (sseEvent{}) {
				evs = append(evs, ev)
			}
			ev = sseEvent{}
		case "id":
			ev.ID = value
		case "event":
			ev.Type = value
		case "data":
			ev.Data = value
		}
	}
	return evs
}

func tokens(ids []string, from int) []sseEvent {
	var evs []sseEvent
	for i, id := range ids {
		evs = append(evs, sseEvent{ID: id, Data: fmt.Sprintf("token %d", from+i)})
	}
	return evs
}

// A client whose connection drops after two events reconnects with its
// Last-Event-ID and gets the rest; a retry after the end gets them all;
// the handler ran once.
func TestStreamResumesFromLastEventID(t *testing.T) {
	h := &ticker{n: 6, gap: 20 * time.Millisecond, sse: true}
	srv := streamServer(t, h)
	first := post(t, srv, "k1", "")
	got := readEvents(t, first.Body, 2)
	first.Body.Close() // the connection drops
	if len(got) != 2 {
		t.Fatalf("first connection got %v", got)
	}
	run, _, _ := strings.Cut(got[0].ID, "-")
	id := func(n int) string { return fmt.Sprintf("%s-%d", run, n) }
	if diff := cmp.Diff(tokens([]string{id(1), id(2)}, 1), got); diff != "" {
		t.Fatalf("first two events (-want +got):\n%s", diff)
	}
	resumed := post(t, srv, "k1", got[1].ID)
	if resumed.Header.Get("Idempotent-Replayed") != "true" || resumed.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("resumed response header %v", resumed.Header)
	}
	rest := readEvents(t, resumed.Body, -1)
	resumed.Body.Close()
	if diff := cmp.Diff(tokens([]string{id(3), id(4), id(5), id(6)}, 3), rest); diff != "" {
		t.Fatalf("resumed events (-want +got):\n%s", diff)
	}
	again := post(t, srv, "k1", "")
	all := readEvents(t, again.Body, -1)
	again.Body.Close()
	if diff := cmp.Diff(tokens([]string{id(1), id(2), id(3), id(4), id(5), id(6)}, 1), all); diff != "" {
		t.Fatalf("a retry after the end (-want +got):\n%s", diff)
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// Duplicates that arrive while the first request streams attach to it:
// each gets every event in order, and the handler runs once.
func TestStreamDuplicatesAttach(t *testing.T) {
	h := &ticker{n: 5, gap: 30 * time.Millisecond, sse: true}
	srv := streamServer(t, h)
	const clients = 6
	got := make([][]sseEvent, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 20 * time.Millisecond)
			resp := post(t, srv, "k2", "")
			defer resp.Body.Close()
			got[i] = readEvents(t, resp.Body, -1)
		}()
	}
	wg.Wait()
	for i := 1; i < clients; i++ {
		if diff := cmp.Diff(got[0], got[i]); diff != "" {
			t.Errorf("client %d's events differ from the first's (-first +got):\n%s", i, diff)
		}
	}
	if len(got[0]) != 5 {
		t.Errorf("the first client got %d events, want 5", len(got[0]))
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// A Last-Event-ID of a run that is not the key's (it died and the stream
// was produced again) gets the new run from its start, behind an
// idem-restart event.
func TestStreamRestartMarker(t *testing.T) {
	h := &ticker{n: 2, sse: true}
	srv := streamServer(t, h)
	first := post(t, srv, "k3", "")
	all := readEvents(t, first.Body, -1)
	first.Body.Close()
	resp := post(t, srv, "k3", "999-1")
	got := readEvents(t, resp.Body, -1)
	resp.Body.Close()
	want := append([]sseEvent{{Type: "idem-restart", Data: "the stream was produced again from its start"}}, all...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("resuming another run (-want +got):\n%s", diff)
	}
}

// A body that is not an event stream is recorded at each Flush and
// replayed whole.
func TestStreamFlushedBody(t *testing.T) {
	h := &ticker{n: 3}
	srv := streamServer(t, h)
	var bodies []string
	for range 2 {
		resp := post(t, srv, "k4", "")
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(b))
	}
	if diff := cmp.Diff([]string{"chunk 1;chunk 2;chunk 3;", "chunk 1;chunk 2;chunk 3;"}, bodies); diff != "" {
		t.Fatalf("bodies (-want +got):\n%s", diff)
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// A status that is not recorded (503) goes to its client only, and the
// key is released: a retry runs the handler again.
func TestStreamUnrecordedStatus(t *testing.T) {
	var runs atomic.Int32
	srv := streamServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "busy")
	}))
	for i := range 2 {
		resp := post(t, srv, "k5", "")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || string(b) != "busy" {
			t.Fatalf("request %d: %d %q, want 503 busy", i, resp.StatusCode, b)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want twice", n)
	}
}

// An event stream longer than WithMaxResponseBytes ends, for every
// client, with an idem-error event after the events that fit.
func TestStreamCutAtTheLimit(t *testing.T) {
	h := &ticker{n: 10, sse: true}
	srv := streamServer(t, h, idemhttp.WithMaxResponseBytes(60))
	var got [][]sseEvent
	for range 2 {
		resp := post(t, srv, "k6", "")
		got = append(got, readEvents(t, resp.Body, -1))
		resp.Body.Close()
	}
	last := got[0][len(got[0])-1]
	if len(got[0]) != 3 || last.Type != "idem-error" || last.Data != idemhttp.CodeResponseTooLarge {
		t.Fatalf("cut stream: %v", got[0])
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Fatalf("the replay differs (-first +replay):\n%s", diff)
	}
	if n := h.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// A producer that dies in the middle (here: its handler panics) leaves
// an attached client's response going: an idem-restart event, then the
// run that took over, from its first event. Nothing of the two runs is
// spliced without the marker.
func TestStreamRestartInTheMiddle(t *testing.T) {
	var runs atomic.Int32
	attached := make(chan struct{})
	srv := streamServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run := runs.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "data: run %d token %d\n\n", run, i)
			w.(http.Flusher).Flush()
			if run == 1 && i == 2 {
				<-attached
				time.Sleep(50 * time.Millisecond) // the duplicate reads what was recorded
				panic(http.ErrAbortHandler)
			}
		}
	}))
	first := post(t, srv, "k7", "")
	readEvents(t, first.Body, 1)
	second := post(t, srv, "k7", "")
	close(attached)
	got := readEvents(t, second.Body, -1)
	second.Body.Close()
	first.Body.Close()
	var data []string
	for _, ev := range got {
		data = append(data, ev.Type+"|"+ev.Data)
	}
	want := []string{"|run 1 token 1", "|run 1 token 2", "idem-restart|the stream was produced again from its start",
		"|run 2 token 1", "|run 2 token 2", "|run 2 token 3"}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Fatalf("the attached client's events (-want +got):\n%s", diff)
	}
}
