package sandbox

import (
	"bytes"
	"math"
	"testing"

	"github.com/kindgi/packd/internal/lineq"
)

func TestLineWriterForwardsWholeBoundedLines(t *testing.T) {
	var out bytes.Buffer
	sink := lineSink{output: func(_ string, line []byte) { out.Write(line) }}
	w := lineWriter{sink: sink, maxLine: 8, budget: 1024}
	w.Write([]byte("ab"))
	w.Write([]byte("c\nde"))
	if out.String() != "abc\n" {
		t.Fatalf("partial line leaked: %q", out.String())
	}
	w.Write([]byte("0123456789abcdef\nok\n"))
	w.Write([]byte("tail"))
	w.Flush()
	want := "abc\n" + "de012345" + truncMark + "ok\n" + "tail\n"
	if out.String() != want {
		t.Fatalf("got %q\nwant %q", out.String(), want)
	}

	out.Reset()
	w = lineWriter{sink: sink, maxLine: 100, budget: 6 + lineOverhead + len(droppedMark)}
	w.Write([]byte("12345\n12345\n12345\n"))
	w.Flush()
	if out.String() != "12345\n"+droppedMark {
		t.Fatalf("budget: got %q", out.String())
	}
}

// TestAStreamsBudgetCoversItsMarkers: a call writing a million empty
// lines forwards no more lines than its budget pays for at lineOverhead
// each, and lineOverhead covers the longest marker a queue writes before a
// line after dropping others: what a call puts on a stream stays within
// its budget, markers included (before, each line counted only its bytes,
// and one call put 1.52 MB on a stream of a 1 MiB budget).
func TestAStreamsBudgetCoversItsMarkers(t *testing.T) {
	var out bytes.Buffer
	lines := 0
	w := lineWriter{sink: lineSink{output: func(_ string, line []byte) { out.Write(line); lines++ }}, maxLine: 100, budget: 64 << 10}
	w.Write(bytes.Repeat([]byte{'\n'}, 1_000_000))
	w.Flush()
	if max := (64<<10 - len(droppedMark)) / (1 + lineOverhead); lines > max+1 || !bytes.HasSuffix(out.Bytes(), []byte(droppedMark)) {
		t.Fatalf("%d lines forwarded of a budget of 64 KiB (at most %d and the marker)", lines, max)
	}
	if m := lineq.DefaultMarker(math.MaxInt64); len(m) > lineOverhead {
		t.Fatalf("a queue's marker of %d bytes is longer than lineOverhead (%d): %q", len(m), lineOverhead, m)
	}
}
