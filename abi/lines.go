package abi

import (
	"encoding/json"
	"strconv"
	"strings"
)

// SectionLines names the custom section in which a module may say where
// its code's lines come from (GUEST-ABI.md, "Source lines"): a LineTable
// as JSON. packd rewrites File:N in a call's thrown stack and message and
// in a load error to the source and line the table gives for line N.
const SectionLines = "packd.lines"

// MaxLinesSection bounds the section packd reads (a larger one is
// ignored): a table of a million lines is some 20 MB of JSON.
const MaxLinesSection = 16 << 20

// LineTable says, for each line of the file File a module's code names in
// its stacks (1-based), Lines[2(N-1)] the index in Sources of the line's
// source and Lines[2(N-1)+1] its line there, or -1 and 0 when it has
// none.
type LineTable struct {
	File    string   `json:"file"`
	Sources []string `json:"sources"`
	Lines   []int32  `json:"lines"`
}

// ParseLineTable is the table a SectionLines payload holds, or nil when
// there is none or packd cannot use it (over MaxLinesSection, not JSON,
// naming sources it lacks): that only leaves the module's errors as they
// are.
func ParseLineTable(payload []byte) *LineTable {
	if len(payload) == 0 || len(payload) > MaxLinesSection {
		return nil
	}
	t := &LineTable{}
	if json.Unmarshal(payload, t) != nil || !t.Valid() {
		return nil
	}
	return t
}

// MaxSourceName bounds a source's name in a LineTable, and
// maxRewriteGrowth what Rewrite may add to a text: a module's table
// cannot make its errors much longer than the module made them.
const (
	MaxSourceName    = 512
	maxRewriteGrowth = 64 << 10
)

// Valid reports whether every entry names a source the table has, and
// every name is at most MaxSourceName bytes of printable text.
func (t *LineTable) Valid() bool {
	if t.File == "" || len(t.File) > MaxSourceName || len(t.Lines)%2 != 0 {
		return false
	}
	for _, src := range t.Sources {
		if src == "" || len(src) > MaxSourceName || strings.ContainsFunc(src, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return false
		}
	}
	for i := 0; i < len(t.Lines); i += 2 {
		if s := t.Lines[i]; s < -1 || int(s) >= len(t.Sources) || s >= 0 && t.Lines[i+1] < 1 {
			return false
		}
	}
	return true
}

// Rewrite replaces every File:N in s, where N is a line the table maps
// and File is not the end of a longer name, with its source and line,
// until the text has grown by maxRewriteGrowth.
func (t *LineTable) Rewrite(s string) string {
	if t == nil || !strings.Contains(s, t.File+":") {
		return s
	}
	var b strings.Builder
	from := 0 // s[:from] is written
	for at := 0; ; {
		i := strings.Index(s[at:], t.File+":")
		if i < 0 {
			b.WriteString(s[from:])
			return b.String()
		}
		i += at
		j := i + len(t.File) + 1
		k := j
		for k < len(s) && k-j < 10 && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		n, err := strconv.Atoi(s[j:k])
		whole := i == 0 || !nameByte(s[i-1])
		if err == nil && whole && n >= 1 && 2*n <= len(t.Lines) && t.Lines[2*(n-1)] >= 0 && b.Len()-from < maxRewriteGrowth {
			b.WriteString(s[from:i])
			b.WriteString(t.Sources[t.Lines[2*(n-1)]])
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(int(t.Lines[2*(n-1)+1])))
			from = k
		}
		at = k
	}
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/'
}
