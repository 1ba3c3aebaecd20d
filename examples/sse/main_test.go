package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

type event struct{ ID, Type, Data string }

// client is a minimal EventSource: it POSTs the question with its key
// (and Last-Event-ID when resuming) and reads up to max events (all if
// max < 0).
type client struct {
	t   *testing.T
	url string
}

func (c client) events(key, lastID string, max int) []event {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url+"/answer", strings.NewReader("why is the sky blue"))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close() // before the end: the connection drops
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, ct, b)
	}
	var evs []event
	var ev event
	sc := bufio.NewScanner(resp.Body)
	for (max < 0 || len(evs) < max) && sc.Scan() {
		field, value, _ := strings.Cut(sc.Text(), ": ")
		switch field {
		case "":
			evs, ev = append(evs, ev), event{}
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

// text is the answer the events carry, and whether it ended with done.
func text(evs []event) (string, bool) {
	var toks []string
	done := false
	for _, ev := range evs {
		switch ev.Type {
		case "token":
			toks = append(toks, ev.Data)
		case "done":
			done = true
		}
	}
	return strings.Join(toks, " "), done
}

// A client drops after five tokens and resumes from its Last-Event-ID;
// ten more clients with the same key attach while the answer streams;
// the model answers once, and every client reads the whole answer.
func TestResumeWithLastEventID(t *testing.T) {
	model := &Model{Delay: 15 * time.Millisecond}
	h, err := newHandler(idem.NewGuard(memstore.New()), model)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := client{t, srv.URL}
	want := strings.Join(answer("why is the sky blue"), " ")

	first := c.events("q-1", "", 5)
	if len(first) != 5 || first[4].ID == "" {
		t.Fatalf("first connection: %v", first)
	}
	var wg sync.WaitGroup
	others := make([]string, 10)
	for i := range others {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, done := text(c.events("q-1", "", -1))
			if !done {
				got += " (no done event)"
			}
			others[i] = got
		}()
	}
	rest := c.events("q-1", first[4].ID, -1)
	wg.Wait()
	got, done := text(append(first, rest...))
	if got != want || !done {
		t.Fatalf("resumed answer:\n got %q (done %v)\nwant %q", got, done, want)
	}
	for i, o := range others {
		if diff := cmp.Diff(want, o); diff != "" {
			t.Errorf("attached client %d (-want +got):\n%s", i, diff)
		}
	}
	if n := model.Runs.Load(); n != 1 {
		t.Fatalf("the model answered %d times, want once", n)
	}
}
