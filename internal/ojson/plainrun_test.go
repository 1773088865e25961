package ojson

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPlainRunStopsAtEveryByteAJSONStringCannotHoldAsItIs: each of the
// 256 bytes, at each place in a run of plain ones (eight at a time and
// the rest), ends the run exactly when it is not plain.
func TestPlainRunStopsAtEveryByteAJSONStringCannotHoldAsItIs(t *testing.T) {
	for c := range 256 {
		plain := c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
		for n := 1; n <= 19; n++ {
			for at := range n {
				b := bytes.Repeat([]byte{'a'}, n)
				b[at] = byte(c)
				want := at
				if plain {
					want = n
				}
				for from := 0; from <= at; from++ {
					if got := plainRun(b, from); got != want {
						t.Fatalf("byte %#x at %d of %d, from %d: plainRun says %d, want %d", c, at, n, from, got, want)
					}
				}
			}
		}
	}
}

// appendStringByBytes is AppendString a byte at a time, as it was before
// plainRun: the reference it is held to.
func appendStringByBytes(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			if sur, ok := surrogateAt(s, i); ok {
				b = append(b, '\\', 'u', hexDigits[sur>>12], hexDigits[sur>>8&0xf], hexDigits[sur>>4&0xf], hexDigits[sur&0xf])
				i += 3
			} else {
				b = append(b, "\ufffd"...)
				i++
			}
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// randomText is text of plain runs of every length, escapes, control
// bytes, UTF-8, lone surrogates (WTF-8) and invalid bytes.
func randomText(r *rand.Rand) string {
	parts := []string{"a", "hello, world", strings.Repeat("x", 7), strings.Repeat("y", 8), strings.Repeat("z", 17),
		`"`, `\`, "\n", "\x00", "\x1f", "\x7f", "é", "日本", "\u2028", "\xed\xa0\x80", "\xff", "\xe2\x80", "<&>"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func TestAppendStringWritesWhatItWroteAByteAtATime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for range 20000 {
		s := randomText(r)
		if got, want := AppendString([]byte("x"), s), appendStringByBytes([]byte("x"), s); !bytes.Equal(got, want) {
			t.Fatalf("%q: AppendString writes %s, want %s", s, got, want)
		}
		enc := AppendString(nil, s)
		v, err := Decode(enc)
		if err != nil {
			t.Fatalf("%q written as %s, which does not decode: %v", s, enc, err)
		}
		if utf8.ValidString(s) && v != s {
			t.Fatalf("%q written as %s decodes to %q", s, enc, v)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("hello, \"world\"\n\xff\xed\xa0\x80" + strings.Repeat("x", 20))
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendString(nil, s), appendStringByBytes(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: AppendString writes %s, want %s", s, got, want)
		}
	})
}

// BenchmarkAppendString: a string of 64 KiB of plain text, and one of
// the few bytes a call's ids are.
//
//	go test -run '^$' -bench AppendString ./internal/ojson
func BenchmarkAppendString(b *testing.B) {
	for _, s := range []string{"echo.message", strings.Repeat("hello, bench ", 64<<10/13)} {
		b.Run(strings.Fields(s)[0][:5], func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			buf := make([]byte, 0, len(s)+2)
			for b.Loop() {
				buf = AppendString(buf[:0], s)
			}
		})
	}
}
