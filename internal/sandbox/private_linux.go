package sandbox

import (
	"bytes"
	"syscall"
)

// The private pages of an image mapping, and which of them a reset keeps.

// privatePages is the pages of an image mapping that are private (written
// since the mapping was made, and not given back since), as the last reset
// left them, and the process's page-fault count read before that reset.
// A page of the mapping becomes private only through a fault (a write to a
// page still shared with the image is copy-on-write), and every fault of
// every thread of the process counts (getrusage: minor and major faults,
// of live and exited threads, for faults taken on the process's own
// behalf, get_user_pages included). So while the count has not moved, the
// private pages are these and no others: a reset sets them back without
// asking the kernel which pages were written. One fault anywhere in the
// process and the next reset scans again. Only another process writing
// into this one (ptrace, process_vm_writev) counts its faults as its own,
// and such a process can read and write all of packd anyway.
type privatePages struct {
	valid  bool
	faults int64
	runs   []pageRun // in order, none touching the next
	// idle is the runs private before the scan that found runs: what the
	// calls before the last one wrote; last is the runs private at the
	// last reset, before it gave any back. out is room for settle's
	// answer. The slices are swapped, never dropped: none allocates once
	// grown.
	idle, last, out []pageRun
	resets          uint // settled, for the look every lookEvery resets
	// regions is where PAGEMAP_SCAN writes the runs it finds: in the
	// heap, which the runtime never moves, and made once (a stack array
	// handed to runtime.KeepAlive was copied to the heap at every scan).
	regions [64]pageRegion
}

// pageRun is a run of pages, in bytes from the start of the mapping.
type pageRun struct{ off, len uint64 }

// faultCount is the page faults the process has taken (minor and major).
func faultCount() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Minflt + ru.Majflt, true
}

// keepFree is the private pages an instance keeps without a look: copying
// them all back costs a few microseconds, less than looking which of them
// the last call left alone.
const keepFree = 64

// lookEvery is how often a reset looks which of the pages private before
// the last call it left as they were, and gives those back: a page written
// by every other call would otherwise be faulted in again every other
// call (a fault costs a hundred times what copying a page back does).
const lookEvery = 16

// giveBackFrom is the pages a call newly made private (not private before
// it) past which a reset gives them back to the image instead of copying
// it over them: a page once written stayed private, so after one call that
// wrote 64 MiB every reset of the instance copied 16,385 pages (8.3 ms
// instead of 6.8 µs) and its memory stayed resident. Below it, copying
// beats faulting the pages in again on the next call's writes.
const giveBackFrom = 256

// keepHot is the pages a call made private that the call before it wrote
// too (and its reset gave back) past which a reset gives them back again:
// below it, a run of calls that each write the same few MiB (a C echo of a
// 1 MiB input writes 768 pages) has them copied back, 0.2 ms, instead of
// faulting all of them in again at every call, 10 ms here.
const keepHot = 1024

// settle sets runs (the private pages) back to the image and keeps in
// runs those that stay private; the rest are given back (they read as the
// image again, shared, and take no memory of their own), so that what a
// reset costs and what an instance keeps follow what the last calls wrote:
//
//   - up to keepFree pages, all are copied back and kept;
//   - pages private before the last call (idle) are copied back and kept,
//     but every lookEvery resets those it left as they were (equal to the
//     image) are given back: it did not write them;
//   - pages it made private that the call before it wrote too (last) are
//     copied back and kept, up to keepHot of them: calls that write the
//     same pages go on writing them;
//   - the other pages it made private are given back when there are more
//     than giveBackFrom of them (a big call; the pages the calls before it
//     wrote stay, as the next call will most likely write them again),
//     and otherwise copied back and kept.
//
// A page the kernel will not drop is copied back and kept. last becomes
// the pages private before this reset.
//
// idle is the pages private before the last call: known.idle after a
// scan, known.runs itself when no fault says the call made any new. It
// returns how many pages were private.
func (known *privatePages) settle(b []byte, img *memImage, idle []pageRun) (pages int) {
	var total, hot, fresh uint64
	for _, r := range known.runs {
		total += r.len
	}
	pages = int(total / pageSize)
	if total <= keepFree*pageSize {
		for _, r := range known.runs {
			copy(b[r.off:r.off+r.len], img.data[r.off:r.off+r.len])
		}
		known.last = append(known.last[:0], known.runs...)
		return pages
	}
	sortPages(known.runs, idle, known.last, func(off, end uint64, kind pageKind) {
		switch kind {
		case hotPages:
			hot += end - off
		case freshPages:
			fresh += end - off
		}
	})
	known.resets++
	s := settler{b: b, img: img, out: known.out[:0]}
	dropHot, look := hot > keepHot*pageSize, known.resets%lookEvery == 0
	dropFresh := dropHot || fresh > giveBackFrom*pageSize
	sortPages(known.runs, idle, known.last, func(off, end uint64, kind pageKind) {
		switch {
		case kind == hotPages && dropHot, kind == freshPages && dropFresh:
			s.drop(off, end)
		case kind != oldPages || !look:
			s.keep(off, end)
		default:
			for p := off; p < end; p += pageSize {
				if bytes.Equal(b[p:p+pageSize], img.data[p:p+pageSize]) {
					s.drop(p, p+pageSize)
				} else {
					s.keep(p, p+pageSize)
				}
			}
		}
	})
	s.flush()
	// The runs found become last; what stays private, runs.
	known.runs, known.out, known.last = s.out, known.last, known.runs
	return pages
}

// pageKind is what a piece of the private pages was before the last call.
type pageKind int

const (
	oldPages   pageKind = iota // private already (idle)
	hotPages                   // written by the call before it too (last), then given back
	freshPages                 // neither
)

// sortPages calls f for each piece of runs, in order, with its kind: old
// where it is inside idle, else hot where inside last, else fresh. All
// three are in order; it walks each once.
func sortPages(runs, idle, last []pageRun, f func(off, end uint64, kind pageKind)) {
	i, j := 0, 0
	for _, r := range runs {
		off, end := r.off, r.off+r.len
		for off < end {
			for i < len(idle) && idle[i].off+idle[i].len <= off {
				i++
			}
			for j < len(last) && last[j].off+last[j].len <= off {
				j++
			}
			nextIdle, nextLast := end, end
			if i < len(idle) {
				nextIdle = min(end, idle[i].off)
			}
			if j < len(last) {
				nextLast = min(end, last[j].off)
			}
			stop, kind := min(nextIdle, nextLast), freshPages
			switch {
			case i < len(idle) && idle[i].off <= off:
				stop, kind = min(end, idle[i].off+idle[i].len), oldPages
			case j < len(last) && last[j].off <= off:
				stop, kind = min(end, last[j].off+last[j].len, nextIdle), hotPages
			}
			f(off, stop, kind)
			off = stop
		}
	}
}

// settler copies back and gives back the pages settle says, a run at a
// time: the runs it keeps go in out, and the pages to give back are
// gathered into one madvise per run.
type settler struct {
	b         []byte
	img       *memImage
	out       []pageRun
	from, end uint64 // the pages waiting to be given back
}

func (s *settler) keep(off, end uint64) {
	s.flush()
	copy(s.b[off:end], s.img.data[off:end])
	if n := len(s.out); n > 0 && s.out[n-1].off+s.out[n-1].len == off {
		s.out[n-1].len += end - off
		return
	}
	s.out = append(s.out, pageRun{off, end - off})
}

func (s *settler) drop(off, end uint64) {
	if s.from < s.end && s.end == off {
		s.end = end
		return
	}
	s.flush()
	s.from, s.end = off, end
}

func (s *settler) flush() {
	from, end := s.from, s.end
	s.from, s.end = 0, 0
	if from < end && syscall.Madvise(s.b[from:end], syscall.MADV_DONTNEED) != nil {
		s.keep(from, end)
	}
}
