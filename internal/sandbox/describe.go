package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kindgi/packd/abi"
)

// Description is what a module says it serves (abi.Description).
type Description = abi.Description

// Describe runs the module once to ask which tool and check ids it serves,
// under Config.LoadTimeout and Config.LoadFuel; an unchanged module's
// answer comes from the cache (describecache.go).
func (m *Module) Describe(ctx context.Context) (Description, error) {
	var d Description
	if m.shape != nil {
		return d, m.shape
	}
	if d, ok := m.describedBefore(); ok {
		return d, nil
	}
	describeRuns.Add(1)
	lctx, cancel := context.WithTimeout(ctx, m.sb.cfg.LoadTimeout)
	defer cancel()
	var said loadStderr
	var lines loadLines
	rep, err := m.run(lctx, abi.ExportDescribe, Request{CallLimits: CallLimits{Fuel: m.sb.cfg.LoadFuel}, Output: func(stream string, line []byte) {
		lines.add(stream, line)
		if stream == "stderr" {
			said.add(line)
			_, _ = m.sb.stderr.Write(line)
		} else {
			_, _ = m.sb.stdout.Write(line)
		}
	}})
	if err != nil && !errors.Is(err, ErrLoadLimit) {
		if why := said.why(); why != "" {
			err = fmt.Errorf("%w; the guest wrote: %s", err, why)
		}
	}
	switch {
	case errors.Is(err, ErrDeadline) && ctx.Err() == nil:
		return d, fmt.Errorf("%w: its start function, _initialize and kindgi_describe ran over the load timeout of %v (packd's --load-timeout; docs/operations.md)", ErrLoadLimit, m.sb.cfg.LoadTimeout)
	case errors.Is(err, ErrOutOfFuel):
		return d, fmt.Errorf("%w: its start function, _initialize and kindgi_describe ran over the load fuel of %d (packd's --load-fuel; a TypeScript pack's zod schemas are built there: docs/operations.md)", ErrLoadLimit, m.sb.cfg.LoadFuel)
	case err != nil:
		return d, err
	}
	if rep.Status != abi.StatusOK {
		return d, fmt.Errorf("%s returned status %d", abi.ExportDescribe, rep.Status)
	}
	if err := json.Unmarshal(rep.Body, &d); err != nil {
		return d, fmt.Errorf("reading %s answer: %w", abi.ExportDescribe, err)
	}
	m.keepDescribed(rep, &lines)
	return d, nil
}

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
