package filestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"syscall"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// A stream's items (idemstore.Streamer) live in the key's items file,
// beside its record:
//
//	root/ab/cd/<sha256hex>.items
//
// It belongs to one run: it starts with a header naming the run's fence,
// and items are appended to it in place, each as
//
//	4  data length n
//	n  data
//	4  CRC-32C of the fence, the item's sequence number, n and the data
//
// The first item of a run replaces the file of any earlier run atomically
// (a new file renamed over it), so a claim that starts a new run needs to
// touch no items file: readers take items only from a file whose fence is
// the record's. A reader reads without the lock, so it may meet an item
// being appended: its checksum (which binds the fence and position too)
// does not match yet, and the reader stops before it. A crash mid-append
// leaves such a torn item at the end, which the next append cuts off (the
// Guard never delivered it: its append did not return). Delete and
// Cleanup remove the items file before the record, so a record that
// starts again at fence 1 never meets an old run's file of that fence.
//
// An append reads the file to find its end: the store is meant for
// streams of up to thousands of items.
const (
	itemsExt    = ".items"
	itemsMagic  = "IDEMIT"
	itemsFormat = 1
	itemsHeader = 16 // magic, format, a reserved byte, fence
	itemFrame   = 8  // length and checksum around each item's data
	// readPoll is where ReadStream's polling starts, backing off to the
	// poll interval.
	readPoll = time.Millisecond
	// defaultReadMax is how many items a ReadStream returns when the
	// request does not say.
	defaultReadMax = 256
)

var _ idemstore.Streamer = (*Store)(nil)

// errReread is readStream's answer when the record changed between its
// two reads: read both again.
var errReread = errors.New("filestore: the record changed while its stream was read")

// itemSum is an item's checksum: bound to its run and position.
func itemSum(fence, seq uint64, data []byte) uint32 {
	var b [20]byte
	binary.BigEndian.PutUint64(b[0:], fence)
	binary.BigEndian.PutUint64(b[8:], seq)
	binary.BigEndian.PutUint32(b[16:], uint32(len(data)))
	return crc32.Update(crc32.Checksum(b[:], castagnoli), castagnoli, data)
}

// parseItems returns the items of the file b for the run under fence (none
// for a file of another run, or no file) and the length of the file they
// take: past it is a torn item, if anything.
func parseItems(b []byte, fence uint64) (items [][]byte, end int) {
	if len(b) < itemsHeader || string(b[:6]) != itemsMagic || b[6] != itemsFormat || binary.BigEndian.Uint64(b[8:]) != fence {
		return nil, 0
	}
	end = itemsHeader
	for rest := b[end:]; len(rest) >= itemFrame; rest = b[end:] {
		n := int(binary.BigEndian.Uint32(rest))
		if n > len(rest)-itemFrame {
			break
		}
		data := rest[4 : 4+n]
		if binary.BigEndian.Uint32(rest[4+n:]) != itemSum(fence, uint64(len(items)), data) {
			break
		}
		items = append(items, data)
		end += itemFrame + n
	}
	return items, end
}

// appendItem frames data as item seq of the run under fence.
func appendItem(b []byte, fence, seq uint64, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, itemSum(fence, seq, data))
}

// AppendItem implements idemstore.Streamer under the key lock, as a fenced
// write like Complete: the first item of a run writes a new items file
// (atomically replacing an earlier run's), later ones are appended to it.
func (s *Store) AppendItem(ctx context.Context, l idemstore.Lease, seq uint64, data []byte) error {
	if err := ctxErr(ctx, "append item", l.Key); err != nil {
		return err
	}
	p := s.paths(l.Key)
	kl, err := s.lock(ctx, &p)
	if err != nil {
		return s.lockErr(ctx, "append item", l.Key, err)
	}
	defer kl.unlock()
	r, ok, err := s.read(&p, l.Key)
	if err != nil {
		return err
	}
	if !ok || r.State != idemstore.StateInProgress || r.Owner != l.Owner || r.Fence != l.Fence {
		return fmt.Errorf("filestore: append item %q: %w (fence %d)", l.Key, idem.ErrLeaseLost, l.Fence)
	}
	b, err := readFile(p.items, make([]byte, 0, 4096))
	if err != nil && err != syscall.ENOENT {
		return s.fsErr("reading items", p.items, err)
	}
	items, end := parseItems(b, l.Fence)
	if resent, err := idemstore.CheckAppend(items, seq, data); resent || err != nil {
		if err != nil {
			return fmt.Errorf("filestore: append item %q: %w", l.Key, err)
		}
		return nil
	}
	if size := max(end, itemsHeader) + itemFrame + len(data); size > maxResult {
		return fmt.Errorf("filestore: append item %q: %w: item %d makes the items file %d bytes, over the %d-byte limit", l.Key, idem.ErrResultTooLarge, seq, size, maxResult)
	}
	if err := ctxErr(ctx, "append item", l.Key); err != nil {
		return err
	}
	if end == 0 { // the run's first item: a file of its own
		h := make([]byte, itemsHeader, itemsHeader+itemFrame+len(data))
		copy(h, itemsMagic)
		h[6] = itemsFormat
		binary.BigEndian.PutUint64(h[8:], l.Fence)
		return s.replace("items", &p, p.items, appendItem(h, l.Fence, seq, data))
	}
	return s.appendTo(&p, end, appendItem(nil, l.Fence, seq, data))
}

// appendTo writes b at offset end of the key's items file, cutting off
// whatever follows end (a torn item), and syncs it.
func (s *Store) appendTo(p *paths, end int, b []byte) error {
	f, err := os.OpenFile(p.items, os.O_WRONLY, filePerm)
	if err != nil {
		return s.fsErr("opening items", p.items, err)
	}
	if err = f.Truncate(int64(end)); err == nil {
		_, err = f.WriteAt(b, int64(end))
	}
	if err == nil && !s.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Readers stop at the torn item; the next append cuts it off.
		return s.fsErr("appending item", p.items, err)
	}
	return nil
}

// ReadStream implements idemstore.Streamer without the lock: the record,
// then the items file, each read whole. A waiting reader polls (1ms,
// backing off to the poll interval), as Wait does.
func (s *Store) ReadStream(ctx context.Context, req idemstore.StreamRead) (idemstore.StreamBatch, error) {
	p := s.paths(req.Key)
	delay := readPoll
	var t *time.Timer
	defer stopTimer(&t)
	for {
		if err := ctxErr(ctx, "read stream", req.Key); err != nil {
			return idemstore.StreamBatch{}, err
		}
		b, more, err := s.readStream(&p, &req)
		if err == errReread {
			continue
		}
		if err != nil || !more {
			return b, err
		}
		if err := pause(ctx, &t, delay); err != nil {
			return idemstore.StreamBatch{}, fmt.Errorf("filestore: read stream %q: %w", req.Key, err)
		}
		delay = min(delay*2, s.poll)
	}
}

// readStream reads req's batch once; wait: it has nothing new for a
// reader that waits.
func (s *Store) readStream(p *paths, req *idemstore.StreamRead) (b idemstore.StreamBatch, wait bool, err error) {
	r, ok, err := s.read(p, req.Key)
	if err != nil {
		return b, false, err
	}
	now := s.now()
	if !ok || !live(&r, now) {
		return b, false, nil
	}
	b = idemstore.NewStreamBatch(r.State, r.Fence, r.LeaseUntil, now, r.Result)
	data, err := readFile(p.items, make([]byte, 0, 4096))
	if err != nil && err != syscall.ENOENT {
		return b, false, s.fsErr("reading items", p.items, err)
	}
	items, end := parseItems(data, r.Fence)
	if end == 0 && len(data) >= itemsHeader && binary.BigEndian.Uint64(data[8:]) > r.Fence {
		// A later run's file: the record was replaced since it was read
		// (it expired, or was taken over, and a new run began). An
		// earlier run's file is only left over.
		return b, false, errReread
	}
	b.Count = uint64(len(items))
	if req.From < b.Count {
		m := uint64(defaultReadMax)
		if req.Max > 0 {
			m = uint64(req.Max)
		}
		b.Items = items[req.From:min(b.Count, req.From+m)]
		return b, false, nil
	}
	return b, req.Idle(b), nil
}

// removeItems removes the key's items file, before its record goes.
func (s *Store) removeItems(p *paths) error {
	if err := os.Remove(p.items); err != nil && !errors.Is(err, os.ErrNotExist) {
		return s.fsErr("removing items", p.items, err)
	}
	return nil
}
