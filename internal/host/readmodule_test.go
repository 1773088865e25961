package host

import (
	"bytes"
	"strings"
	"testing"
)

// readSized reads a module in one buffer of the size it had when opened,
// and still reads what it holds when it shrank or grew meanwhile, refusing
// it past the limit.
func TestReadSizedReadsWhatTheFileHolds(t *testing.T) {
	data := bytes.Repeat([]byte("wasm"), 1000)
	for _, c := range []struct {
		name    string
		size    int64 // what the stat said
		limit   int
		want    int // bytes read, or -1: refused
		wantCap bool
	}{
		{"as stated", 4000, 5000, 4000, true},
		{"shrank", 5000, 6000, 4000, false},
		{"grew within the limit", 3000, 4000, 4000, false},
		{"grew past the limit", 3000, 3999, -1, false},
		{"stated as empty", 0, 5000, 4000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := readSized(bytes.NewReader(data), c.size, c.limit)
			if c.want < 0 {
				if err == nil || !strings.Contains(err.Error(), "grew past the module size limit of 3999") {
					t.Fatalf("got %d bytes, err %v; want the limit's error", len(b), err)
				}
				return
			}
			if err != nil || !bytes.Equal(b, data[:c.want]) {
				t.Fatalf("got %d bytes, err %v; want the first %d", len(b), err, c.want)
			}
			if c.wantCap && cap(b) != int(c.size)+1 {
				t.Fatalf("cap %d: the buffer was not the one sized at open", cap(b))
			}
		})
	}
}
