package sandbox

import (
	"bytes"
	"testing"
)

func TestLineWriterForwardsWholeBoundedLines(t *testing.T) {
	var out bytes.Buffer
	sink := &lineSink{w: &out}
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

func TestPrescanBoundsDeclaredCounts(t *testing.T) {
	head := "\x00asm\x01\x00\x00\x00"
	cases := map[string]string{
		"100M imports in 8 bytes": head + "\x02\x06\xc7\xc7\xc7\x30\x00\x00",
		"4 GiB data segment":      head + "\x0b\x08\x01\x01\xff\xff\xff\xff\x0f\x00",
		"section past the end":    head + "\x01\x7f\x00",
		"too many locals":         head + "\x0a\x09\x01\x07\x01\xff\xff\xff\xff\x0f\x7f",
		"huge table":              head + "\x04\x07\x01\x70\x00\xff\xff\xff\x0f",
	}
	for name, bin := range cases {
		if err := prescan([]byte(bin)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := prescan([]byte(head)); err != nil {
		t.Errorf("empty module: %v", err)
	}
}
