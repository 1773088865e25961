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

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/lineq"
	"github.com/kindgi/packd/internal/replay"
)

// ReplayRecords writes the records of recorded calls (replay.Record), one
// file each, into a directory (packd serve --record DIR), for packd
// replay.
//
// A call never waits for the disk: its record goes into a bounded queue
// after its answer is written, and one goroutine encodes and writes it.
// The directory holds at most MaxBytes of records (those there when it
// opened count): past it, records are not written. Every record not
// written is counted in packd_replay_records_total by why, and said in a
// replay-record-lost record for the first and every thousandth.
type ReplayRecords struct {
	dir     string
	max     int64
	used    atomic.Int64
	work    *lineq.Worker[*replay.Record]
	metrics *Metrics
	log     *Log
	lost    atomic.Int64
}

// replayQueue is how many records may wait for the disk: with records of
// at most host.DefaultRecordCallBytes, 64 MiB.
const replayQueue = 64

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
	d := &ReplayRecords{dir: dir, max: maxBytes, metrics: m, log: r}
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
	d.work = lineq.NewWorker(replayQueue, d.write, nil)
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
	if queued, _ := d.work.Put(rec); !queued {
		d.loss(replayDropped, "The record writer fell behind")
	}
}

func (d *ReplayRecords) count(outcome string) {
	if d.metrics != nil {
		d.metrics.replayRecords.WithLabelValues(outcome).Inc()
	}
}

// loss counts a record not written, and says so for the first and every
// thousandth.
func (d *ReplayRecords) loss(outcome, why string) {
	d.count(outcome)
	if n := d.lost.Add(1); n == 1 || n%1000 == 0 {
		d.log.Line("warn", fmt.Sprintf("%s: %d call records not written so far", why, n),
			Field{"event", "replay-record-lost"}, Field{"kind", "replay-record-lost"}, Field{"reason", outcome}, Field{"lost", int(n)})
	}
}

// write writes one record, within the directory's bound.
func (d *ReplayRecords) write(rec *replay.Record) {
	b, err := rec.Encode()
	if errors.Is(err, replay.ErrTooLarge) {
		d.count(host.RecordTooLarge)
		return
	}
	if err != nil {
		d.loss(replayFailed, "Cannot encode a call record: "+err.Error())
		return
	}
	size := onDisk(int64(len(b)))
	if d.max > 0 && d.used.Load()+size > d.max {
		d.loss(replayFull, fmt.Sprintf("The record directory holds its --record-max-mib of %d MiB", d.max>>20))
		return
	}
	if _, err := replay.WriteEncoded(d.dir, rec, b); err != nil {
		d.loss(replayFailed, "Cannot write a call record: "+err.Error())
		return
	}
	d.used.Add(size)
	d.count(replayWritten)
}

// diskBlock is what the directory's bound counts a file in: a file takes
// whole blocks of the file system (4 KiB on most), and a small record one.
const diskBlock = 4096

// onDisk is what n bytes of a file take of the directory's bound.
func onDisk(n int64) int64 { return (n + diskBlock - 1) / diskBlock * diskBlock }

// Close writes out what is queued, waiting until ctx is done (then its
// error); a call that ends later is counted as dropped. Safe twice.
func (d *ReplayRecords) Close(ctx context.Context) error { return d.work.Close(ctx) }
