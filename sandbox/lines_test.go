package sandbox

import (
	"bytes"
	"testing"
)

func TestLineWriterForwardsWholeBoundedLines(t *testing.T) {
	var out bytes.Buffer
	sink := lineSink{output: func(_ string, line []byte) { out.Write(line) }}
	w := lineWriter{sink: sink, maxLine: 8, budget: 64}
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
	w = lineWriter{sink: sink, maxLine: 100, budget: 10}
	w.Write([]byte("12345\n12345\n12345\n"))
	w.Flush()
	if out.String() != "12345\n"+droppedMark {
		t.Fatalf("budget: got %q", out.String())
	}
}
