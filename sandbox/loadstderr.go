package sandbox

import "strings"

// maxLoadStderr is as much of a module's stderr at load as is kept to say
// why its load failed; the rest still goes to Config.Stderr.
const maxLoadStderr = 4 << 10

// loadStderr keeps the start of what a module writes on stderr while it is
// initialised and described, so that a load that fails can say why in the
// guest's own words: a Go init panic prints "panic: <value>" there, then
// traps.
type loadStderr struct {
	lines []string
	size  int
}

func (l *loadStderr) add(line []byte) {
	if l.size >= maxLoadStderr {
		return
	}
	s := strings.TrimRight(string(line[:min(len(line), maxLoadStderr-l.size)]), "\r\n")
	l.size += len(line)
	l.lines = append(l.lines, s)
}

// why is the guest's reason: from its first "panic: " line (Go's) up to
// the blank line before the goroutine trace, else its last non-blank line
// (a C or Rust guest's last words before it aborts); "" when it wrote
// nothing.
func (l *loadStderr) why() string {
	for i, s := range l.lines {
		if strings.HasPrefix(s, "panic: ") {
			end := i + 1
			for end < len(l.lines) && strings.TrimSpace(l.lines[end]) != "" {
				end++
			}
			return strings.Join(l.lines[i:end], " / ")
		}
	}
	for i := len(l.lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(l.lines[i]); s != "" {
			return s
		}
	}
	return ""
}
