package sandbox

import (
	"encoding/json"
	"sync/atomic"

	"github.com/kindgi/packd/abi"
)

// What kindgi_describe answered, kept by content beside the module's pass
// entry (<entry>.describe, sealed as the entry is, passcache.go): a boot
// of an unchanged module does not run it again (start, _initialize and
// kindgi_describe in an instance of their own, 14 ms of CPU a Go module at
// every boot). Kept are the guest ABI version, the fuel the load-time code
// burnt, the answer, and the lines it wrote, which a later boot writes
// again as they were written. It is used only while the load fuel is at
// least what was burnt (a lower --load-fuel runs it again, and fails it
// as it should). A description that depends on chance (the clock, random
// bytes) answers as it first did until the module or packd changes. A load
// that wrote more than maxKeptLines bytes of lines is not kept, nor is one
// that failed.

const maxKeptLines = 64 << 10

// describeRuns counts the descriptions run (not taken from the cache), for
// the tests.
var describeRuns atomic.Int64

type described struct {
	ABI   int32           `json:"abi"`
	Fuel  int64           `json:"fuel"`
	Body  json.RawMessage `json:"body"`
	Lines []loadLine      `json:"lines,omitempty"`
}

type loadLine struct {
	Stderr bool   `json:"e,omitempty"`
	Line   []byte `json:"l"`
}

// loadLines are the lines load-time code wrote, while they stay under
// maxKeptLines bytes.
type loadLines struct {
	lines []loadLine
	size  int
	over  bool
}

func (l *loadLines) add(stream string, line []byte) {
	if l.size += len(line); l.size > maxKeptLines {
		l.over, l.lines = true, nil
	}
	if !l.over {
		l.lines = append(l.lines, loadLine{Stderr: stream == "stderr", Line: append([]byte(nil), line...)})
	}
}

func describeName(pass string) string { return pass + ".describe" }

// describedBefore is the module's description as kept, its lines written
// again, or false when none is kept that can be used.
func (m *Module) describedBefore() (Description, bool) {
	var d Description
	if m.passName == "" {
		return d, false
	}
	b, ok := m.sb.seals.loadSealed(describeName(m.passName))
	var e described
	if !ok || json.Unmarshal(b, &e) != nil || !abi.Serves(e.ABI) || e.Fuel > m.sb.cfg.LoadFuel || json.Unmarshal(e.Body, &d) != nil {
		return Description{}, false
	}
	m.abiVersion.Store(e.ABI)
	for _, l := range e.Lines {
		if l.Stderr {
			_, _ = m.sb.stderr.Write(l.Line)
		} else {
			_, _ = m.sb.stdout.Write(l.Line)
		}
	}
	return d, true
}

// keepDescribed keeps what a description that succeeded answered.
func (m *Module) keepDescribed(rep Reply, lines *loadLines) {
	if m.passName == "" || lines.over {
		return
	}
	b, err := json.Marshal(described{ABI: m.abiVersion.Load(), Fuel: rep.FuelUsed, Body: rep.Body, Lines: lines.lines})
	if err == nil {
		_ = m.sb.seals.saveSealed(describeName(m.passName), b) // one that cannot be kept runs again next boot
	}
}
