package ojson

import (
	"encoding/binary"
	"unsafe"
)

// Words of eight bytes, each byte 0x01 (lsb) or 0x80 (msb).
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plainRun is where the run of bytes from b[i] that a JSON string holds as
// they are ends: the first at or after i that is not 0x20-0x7f, '"' or
// '\\' aside (len(b) when there is none). It reads eight bytes at a time:
// a long string of plain text is most of a large document.
func plainRun(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if notPlain(binary.LittleEndian.Uint64(b[i:])) {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// plainRunString is plainRun of a string.
func plainRunString(s string, i int) int {
	return plainRun(unsafe.Slice(unsafe.StringData(s), len(s)), i)
}

// notPlain reports whether a byte of x is below 0x20, at or above 0x80,
// '"' or '\\' (each test exact as a whole: a borrow only ever marks a
// byte above one that is).
func notPlain(x uint64) bool {
	quote, backslash := x^(lsb*'"'), x^(lsb*'\\')
	return ((x-lsb*0x20)&^x|x|(quote-lsb)&^quote|(backslash-lsb)&^backslash)&msb != 0
}
