package replay

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/sandbox"
)

// A segment is a file of many records, as a service's record directory
// holds them (packd serve --record): JSON Lines, one record a line, its
// name records-<time>.jsonl. A snapshot's tape, the same for every call
// on the snapshot and most of a small call's record, is written once per
// segment, in a line of its own before the first record that names it:
//
//	{"packdSnapshot":1,"id":"sha256:…","tape":[…]}
//
// and a record line names its snapshot by id alone ("snapshot":{"id":…}).
// A line is written whole or not at all (a batch of whole lines a write),
// so a reader of a segment still being written sees whole records; a
// last line without its newline is one being written, and is skipped.

// SegmentExt is the extension of a segment's name.
const SegmentExt = ".jsonl"

// snapshotLine is a segment's line of a snapshot's tape.
type snapshotLine struct {
	Format int             `json:"packdSnapshot"`
	ID     string          `json:"id"`
	Tape   json.RawMessage `json:"tape"`
}

// Segment appends records to a segment file. Not safe for concurrent
// use: one writer owns it.
type Segment struct {
	f     *os.File
	path  string
	size  int64
	snaps map[string]bool // the snapshots whose tape the segment holds
	buf   []byte          // whole lines not yet written
	// The JSON of the limits the last record held: the same for most
	// records, encoded once.
	limits     sandbox.GuestLimits
	limitsJSON []byte
	call       sandbox.CallLimits
	callJSON   []byte // its members, without the braces
}

// CreateSegment creates a new segment in dir, named by now.
func CreateSegment(dir string, now time.Time) (*Segment, error) {
	name := "records-" + now.UTC().Format("20060102T150405.000000000Z") + SegmentExt
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &Segment{f: f, path: f.Name(), snaps: map[string]bool{}}, nil
}

// Size is what the segment holds, written or buffered.
func (s *Segment) Size() int64 { return s.size + int64(len(s.buf)) }

// Buffered is what Flush would write.
func (s *Segment) Buffered() int { return len(s.buf) }

// ErrNoRoom: a record would take more than the room Append was given.
var ErrNoRoom = errors.New("replay: no room for the record")

// Append encodes rec (and, the first time the segment meets its
// snapshot, the snapshot's tape) into the segment's buffer, and answers
// how many bytes that added: at most room (< 0: any), else ErrNoRoom. A
// record larger than its bound is ErrTooLarge. An error adds nothing.
func (s *Segment) Append(rec *Record, room int64) (int, error) {
	before := len(s.buf)
	newSnap := rec.Snapshot != nil && !s.snaps[rec.Snapshot.ID]
	if newSnap {
		tape, err := rec.Snapshot.tapeJSON()
		if err != nil {
			return 0, err
		}
		snap, err := json.Marshal(snapshotLine{Format: Format, ID: rec.Snapshot.ID, Tape: tape})
		if err != nil {
			return 0, err
		}
		s.buf = append(append(s.buf, snap...), '\n')
	}
	// The line goes straight into the buffer; an error takes it back out.
	var err error
	if s.buf, err = s.appendLine(s.buf, rec); err != nil {
		s.buf = s.buf[:before]
		return 0, err
	}
	if room >= 0 && int64(len(s.buf)-before) > room {
		s.buf = s.buf[:before]
		return 0, ErrNoRoom
	}
	if newSnap {
		s.snaps[rec.Snapshot.ID] = true
	}
	return len(s.buf) - before, nil
}

// Flush writes the buffered lines, in one write.
func (s *Segment) Flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	n, err := s.f.Write(s.buf)
	s.size += int64(n)
	if err != nil {
		// What did not reach the file is dropped whole; a line cut by the
		// error is the one a reader skips. The next snapshot line is
		// written again.
		s.buf = s.buf[:0]
		clear(s.snaps)
		return err
	}
	if cap(s.buf) > 4<<20 {
		s.buf = nil
	} else {
		s.buf = s.buf[:0]
	}
	return nil
}

// Close flushes and closes the segment.
func (s *Segment) Close() error {
	err := s.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// appendLine appends the record as a segment's line: its snapshot by id, the
// tape being in the snapshot's own line. It writes the JSON encoding/json
// would (TestASegmentLineIsTheRecordsJSON holds it to that), by hand: the
// bulk of a record (its request, what the guest read and answered, its
// tape) is appended as it is, compact JSON already or escaped once, where
// encoding/json would reflect over the record and scan the bulk again to
// compact it (most of the writer's time). A record that is not so plain
// (a request with line breaks, bytes that are not UTF-8) is encoded by
// encoding/json. On an error it answers b as it was.
func (s *Segment) appendLine(b []byte, r *Record) ([]byte, error) {
	start := len(b)
	if plainRecord(r) {
		out, err := s.appendRecord(b, r)
		if err != nil {
			return b[:start], err
		}
		b = out
	} else {
		rest := *r
		rest.Snapshot = nil
		j, err := json.Marshal(&rest)
		if err != nil {
			return b[:start], err
		}
		if r.Snapshot != nil {
			id, _ := json.Marshal(r.Snapshot.ID)
			j = append(append(append(j[:len(j)-1], `,"snapshot":{"id":`...), id...), "}}"...)
		}
		b = append(b, j...)
	}
	if n := len(b) - start; r.max > 0 && n > r.max+OverheadBytes {
		return b[:start], fmt.Errorf("%w: %d bytes, the bound %d and %d", ErrTooLarge, n, r.max, OverheadBytes)
	}
	return append(b, '\n'), nil
}

// plainRecord: a record the host made holds its request as ojson encoded
// it (valid, compact, one line), and bytes that are UTF-8.
func plainRecord(r *Record) bool {
	return len(r.Request) > 0 && bytes.IndexAny(r.Request, "\n\r") < 0 && utf8.Valid(r.GuestRequest) && utf8.Valid(r.Result.Output)
}

// appendRecord appends r as encoding/json writes a Record, its snapshot
// by id, in the order of Record's fields.
func (s *Segment) appendRecord(b []byte, r *Record) ([]byte, error) {
	str := ojson.AppendString
	b = strconv.AppendInt(append(b, `{"packdRecord":`...), int64(r.Format), 10)
	t, err := r.RecordedAt.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(append(b, `,"recordedAt":`...), t...)
	b = str(append(b, `,"packId":`...), r.PackID)
	if r.ArtifactVersion != "" {
		b = str(append(b, `,"artifactVersion":`...), r.ArtifactVersion)
	}
	b = str(append(b, `,"target":`...), r.Target)
	b = str(append(b, `,"id":`...), r.ID)
	if r.Version != "" {
		b = str(append(b, `,"version":`...), r.Version)
	}
	b = append(append(b, `,"request":`...), r.Request...)
	b = str(append(b, `,"module":{"path":`...), r.Module.Path)
	b = append(str(append(b, `,"sha256":`...), r.Module.SHA256), '}')
	if s.limitsJSON == nil || s.limits != r.Limits {
		if s.limitsJSON, err = json.Marshal(r.Limits); err != nil {
			return nil, err
		}
		s.limits = r.Limits
	}
	b = append(append(b, `,"limits":`...), s.limitsJSON...)
	if s.callJSON == nil || s.call != r.CallLimits {
		c, err := json.Marshal(r.CallLimits)
		if err != nil {
			return nil, err
		}
		s.callJSON, s.call = c[1:len(c)-1], r.CallLimits
	}
	if len(s.callJSON) > 0 {
		b = append(append(b, ','), s.callJSON...)
	}
	b = str(append(b, `,"instance":`...), r.Instance)
	b = append(b, `,"env":`...)
	if r.Env == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, e := range r.Env {
			if i > 0 {
				b = append(b, ',')
			}
			b = str(b, e)
		}
		b = append(b, ']')
	}
	if len(r.Secrets) > 0 {
		j, err := json.Marshal(r.Secrets)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"secrets":`...), j...)
	}
	b = str(append(b, `,"guestRequest":`...), string(r.GuestRequest))
	b = appendTape(append(b, `,"tape":`...), r.Tape)
	if len(r.Redactions) > 0 {
		j, err := json.Marshal(r.Redactions)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"redactions":`...), j...)
	}
	b = strconv.AppendInt(append(b, `,"result":{"status":`...), int64(r.Result.Status), 10)
	b = str(append(b, `,"output":`...), string(r.Result.Output))
	if r.Result.Error != "" {
		b = str(append(b, `,"error":`...), r.Result.Error)
	}
	b = append(strconv.AppendInt(append(b, `,"fuel":`...), r.Result.Fuel, 10), '}')
	if r.Snapshot != nil {
		b = append(str(append(b, `,"snapshot":{"id":`...), r.Snapshot.ID), '}')
	}
	return append(b, '}'), nil
}

// appendTape appends a tape as encoding/json would write []TapeAnswer.
func appendTape(b []byte, tape []sandbox.TapeAnswer) []byte {
	if tape == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, a := range tape {
		if i > 0 {
			b = append(b, ',')
		}
		b = ojson.AppendString(append(b, `{"import":`...), a.Import)
		b = strconv.AppendUint(append(b, `,"arg":`...), a.Arg, 10)
		if a.Detail != "" {
			b = ojson.AppendString(append(b, `,"detail":`...), a.Detail)
		}
		b = append(b, `,"value":`...)
		if a.Value == nil {
			b = append(b, "null"...)
		} else {
			b = append(base64.StdEncoding.AppendEncode(append(b, '"'), a.Value), '"')
		}
		b = append(strconv.AppendInt(append(b, `,"fuel":`...), a.Fuel, 10), '}')
	}
	return append(b, ']')
}

// tapeJSON is the snapshot's tape as JSON.
func (s *Snapshot) tapeJSON() ([]byte, error) {
	if s.enc != nil {
		return s.enc.json()
	}
	return json.Marshal(s.Tape)
}

// SegmentRecord is one record of a segment, or why its line is none.
type SegmentRecord struct {
	Line   int // 1-based
	Record *Record
	Err    error
}

// A reader holds every snapshot tape of a segment: at most these many, of
// at most this much together (a service writes one a module's snapshot,
// a few a segment).
const (
	maxSegmentSnapshots = 256
	maxSegmentTapes     = 256 << 20
)

// ReadSegment reads a segment's records in order, each line at most
// maxLine bytes; a line of a snapshot's tape is not a record. A record
// whose snapshot the segment has not given before it is an error of its
// line; so is a line longer than maxLine, and the reading stops there.
func ReadSegment(r io.Reader, maxLine int) iter.Seq[SegmentRecord] {
	return func(yield func(SegmentRecord) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		tapes := map[string]json.RawMessage{}
		held := 0 // bytes of tapes
		for n := 1; ; n++ {
			line, err := readLine(br, maxLine)
			if errors.Is(err, io.EOF) {
				return // a last line without its newline: being written
			}
			if err != nil {
				yield(SegmentRecord{Line: n, Err: err})
				return
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var head struct {
				Snapshot *int `json:"packdSnapshot"`
			}
			if json.Unmarshal(line, &head) == nil && head.Snapshot != nil {
				var s snapshotLine
				if err := json.Unmarshal(line, &s); err != nil || s.Format != Format || s.ID == "" {
					if !yield(SegmentRecord{Line: n, Err: fmt.Errorf("not a snapshot line of format %d", Format)}) {
						return
					}
					continue
				}
				if _, had := tapes[s.ID]; !had && (len(tapes) >= maxSegmentSnapshots || held+len(s.Tape) > maxSegmentTapes) {
					if !yield(SegmentRecord{Line: n, Err: fmt.Errorf("more snapshots than a segment holds (%d, %d MiB of tapes)", maxSegmentSnapshots, maxSegmentTapes>>20)}) {
						return
					}
					continue
				}
				held += len(s.Tape) - len(tapes[s.ID])
				tapes[s.ID] = s.Tape
				continue
			}
			rec, err := Read(line)
			if err == nil && rec.Snapshot != nil && rec.Snapshot.Tape == nil {
				tape, ok := tapes[rec.Snapshot.ID]
				if !ok {
					err = fmt.Errorf("the record's snapshot %s is not in the segment before it", rec.Snapshot.ID)
				} else if err = json.Unmarshal(tape, &rec.Snapshot.Tape); err == nil && rec.Snapshot.Tape == nil {
					rec.Snapshot.Tape = []sandbox.TapeAnswer{}
				}
			}
			if err != nil {
				rec = nil
			}
			if !yield(SegmentRecord{Line: n, Record: rec, Err: err}) {
				return
			}
		}
	}
}

// readLine reads one line with its newline; io.EOF when none is whole.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > max+1 {
			return nil, fmt.Errorf("a line longer than a record can be (%d MiB)", max>>20)
		}
		line = append(line, part...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err // io.EOF: a partial last line is dropped
		}
	}
}
