package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/replay"
)

// ReplayRecords writes the records of recorded calls (replay.Record) into
// a directory (packd serve --record DIR), for packd replay: appended to
// segments (replay.Segment: JSON Lines, a snapshot's tape once per
// segment), a new one past segmentBytes, not a file per call.
//
// A call never waits for the disk: its record goes into a bounded queue
// after its answer is written, and one goroutine encodes and appends it,
// writing what it has appended whenever the queue is empty (or 1 MiB
// waits), in one write. The directory holds at most MaxBytes of records
// (those there when it opened count): past it, records are not written.
// Every record not written is counted in packd_replay_records_total by
// why, and said in a replay-record-lost record for the first and every
// thousandth.
type ReplayRecords struct {
	dir     string
	max     int64
	segMax  int64
	used    atomic.Int64
	queued  atomic.Int64 // what the queued records weigh (weight)
	work    *lineq.Worker[*replay.Record]
	metrics *Metrics
	log     *Log
	lost    atomic.Int64
	// The writer goroutine's: the segment appended to, and how many
	// records it holds unwritten.
	seg     *replay.Segment
	pending int
	// flushArmed: a flush marker (a nil record) is on its way to the
	// queue (flushAfter).
	flushArmed atomic.Bool
}

// replayQueue is how many records may wait for the disk, and
// replayQueueBytes what they may weigh together (weight): a burst of
// small records waits, a burst of large ones is bounded in memory.
const (
	replayQueue      = 4096
	replayQueueBytes = 64 << 20
	// segmentBytes is where a segment ends and the next begins (or a
	// quarter of the directory's bound, when that is less, at least 1 MiB).
	segmentBytes = 64 << 20
	// flushBytes is the most the writer keeps unwritten while records wait.
	flushBytes = 1 << 20
	// flushAfter is how long a record waits unwritten once the queue is
	// empty: a write of its own for each call that found the queue empty
	// (most of them, in a service that keeps up) was half of what
	// recording cost a call at c=32 on 2 cores, a system call each.
	flushAfter = 20 * time.Millisecond
)

// weight is what a queued record holds in memory, near enough: the bytes
// of the call it keeps.
func weight(rec *replay.Record) int64 {
	n := len(rec.Request) + len(rec.GuestRequest) + len(rec.Result.Output) + 1024
	for _, a := range rec.Tape {
		n += len(a.Value) + 64
	}
	return int64(n)
}

// The outcomes packd_replay_records_total counts besides the
// replay.Record… reasons: a record written, or not for the directory's
// bound, a writer behind, or a write that failed.
const (
	replayWritten = "written"
	replayFull    = "full"
	replayDropped = "dropped"
	replayFailed  = "failed"
)

// OpenReplayRecords opens (creating) dir, whose records may take maxBytes
// (≤ 0: no bound).
func OpenReplayRecords(dir string, maxBytes int64, m *Metrics, r *Log) (*ReplayRecords, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("opening the record directory: %w", err)
	}
	if r == nil {
		r = NewLog(io.Discard)
	}
	d := &ReplayRecords{dir: dir, max: maxBytes, segMax: segmentBytes, metrics: m, log: r}
	if maxBytes > 0 {
		d.segMax = max(min(segmentBytes, maxBytes/4), 1<<20)
	}
	var used int64
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if info, ierr := e.Info(); ierr == nil {
				used += onDisk(info.Size())
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("opening the record directory: %w", err)
	}
	d.used.Store(used)
	d.work = lineq.NewWorker(replayQueue, d.write, d.finish)
	return d, nil
}

// Keep queues a recorded call's record without waiting; skipped says why a
// call to be recorded has none (host.RecordTooLarge, …).
func (d *ReplayRecords) Keep(rec *replay.Record, skipped, artifactVersion string) {
	if rec == nil {
		if skipped != "" {
			d.count(skipped)
		}
		return
	}
	rec.ArtifactVersion = artifactVersion
	w := weight(rec)
	if d.queued.Add(w) > replayQueueBytes {
		d.queued.Add(-w)
		d.loss(replayDropped, "The record writer fell behind")
		return
	}
	if queued, _ := d.work.Put(rec); !queued {
		d.queued.Add(-w)
		d.loss(replayDropped, "The record writer fell behind")
	}
}

func (d *ReplayRecords) count(outcome string) {
	if d.metrics != nil {
		d.metrics.replayRecords.WithLabelValues(outcome).Inc()
	}
}

func (d *ReplayRecords) countN(outcome string, n int) {
	if d.metrics != nil && n > 0 {
		d.metrics.replayRecords.WithLabelValues(outcome).Add(float64(n))
	}
}

// loss counts n records not written, and says so for the first and every
// thousandth.
func (d *ReplayRecords) loss(outcome, why string) { d.lossN(outcome, why, 1) }

func (d *ReplayRecords) lossN(outcome, why string, n int) {
	d.countN(outcome, n)
	for range n {
		if k := d.lost.Add(1); k == 1 || k%1000 == 0 {
			d.log.Line("warn", fmt.Sprintf("%s: %d call records not written so far", why, k),
				Field{"event", "replay-record-lost"}, Field{"kind", "replay-record-lost"}, Field{"reason", outcome}, Field{"lost", int(k)})
		}
	}
}

// write appends one record to the segment, within the directory's bound,
// and writes what waits once flushBytes wait, or flushAfter after the
// queue was found empty (a nil record is that moment: write flushes).
func (d *ReplayRecords) write(rec *replay.Record) {
	if rec == nil {
		d.flushArmed.Store(false)
		d.flush()
		return
	}
	defer d.queued.Add(-weight(rec))
	if d.seg != nil && d.seg.Size() >= d.segMax {
		d.closeSegment()
	}
	if d.seg == nil {
		seg, err := replay.CreateSegment(d.dir, time.Now())
		if err != nil {
			d.loss(replayFailed, "Cannot write a call record: "+err.Error())
			return
		}
		d.seg = seg
	}
	room := int64(-1)
	if d.max > 0 {
		room = max(d.max-d.used.Load(), 0)
	}
	n, err := d.seg.Append(rec, room)
	switch {
	case errors.Is(err, replay.ErrTooLarge):
		d.count(host.RecordTooLarge)
	case errors.Is(err, replay.ErrNoRoom):
		d.loss(replayFull, fmt.Sprintf("The record directory holds its --record-max-mib of %d MiB", d.max>>20))
	case err != nil:
		d.loss(replayFailed, "Cannot encode a call record: "+err.Error())
	default:
		d.used.Add(int64(n))
		d.pending++
	}
	switch {
	case d.seg.Buffered() >= flushBytes:
		d.flush()
	case d.work.Len() == 0 && d.flushArmed.CompareAndSwap(false, true):
		time.AfterFunc(flushAfter, func() {
			if queued, _ := d.work.Put(nil); !queued {
				d.flushArmed.Store(false) // full: the next record arms it again; closed: finish flushes
			}
		})
	}
}

// flush writes what the segment holds unwritten.
func (d *ReplayRecords) flush() {
	if d.seg == nil || d.pending == 0 && d.seg.Buffered() == 0 {
		return
	}
	n := d.pending
	d.pending = 0
	if err := d.seg.Flush(); err != nil {
		d.lossN(replayFailed, "Cannot write call records: "+err.Error(), n)
		return
	}
	d.countN(replayWritten, n)
}

// closeSegment writes out and closes the segment; the next record starts
// another.
func (d *ReplayRecords) closeSegment() {
	d.flush()
	if err := d.seg.Close(); err != nil {
		d.log.Line("warn", "Cannot close a record segment: "+err.Error(), Field{"event", "replay-segment-failed"}, Field{"kind", "replay-segment-failed"})
	}
	d.seg = nil
}

// finish runs once the queue is closed and empty.
func (d *ReplayRecords) finish() {
	if d.seg != nil {
		d.closeSegment()
	}
}

// diskBlock is what the directory's bound counts a file in: a file takes
// whole blocks of the file system (4 KiB on most), and a small record one.
const diskBlock = 4096

// onDisk is what n bytes of a file take of the directory's bound.
func onDisk(n int64) int64 { return (n + diskBlock - 1) / diskBlock * diskBlock }

// Close writes out what is queued, waiting until ctx is done (then its
// error); a call that ends later is counted as dropped. Safe twice.
func (d *ReplayRecords) Close(ctx context.Context) error { return d.work.Close(ctx) }
