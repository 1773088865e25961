package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kindgi/packd/internal/ojson"
)

// usageLog is the hook that sums what each tenant's calls used over an
// interval and writes one JSON line per tenant per interval to a file, a
// platform's bill: tenantId, from, to, calls and calls by outcome, fuel,
// cpuMs, memoryKiBMs (memory × time), egressRequests and egressBytes,
// summed exactly from the calls (every call the audit log has a line for,
// refusals included), in integers (cpuMs in whole microseconds).
//
// A call only adds to its tenant's sums (a map, under a lock); the lines
// are written by a goroutine of the log's own when an interval ends, and
// Close writes the interval under way. At most maxUsageTenants tenants are
// summed one by one in an interval; the calls of any more are summed in
// one line without a tenantId, that says how many tenants it holds, so
// that callers inventing tenant ids cannot grow packd's memory.
type usageLog struct {
	path     string
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	from    time.Time
	tenants map[string]*usageSum
	other   *usageSum // the tenants past maxUsageTenants
	others  map[string]struct{}
	w       io.WriteCloser // guarded by wmu
	wmu     sync.Mutex
	log     *Log

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// maxUsageTenants is how many tenants an interval sums one by one.
const maxUsageTenants = 10_000

// DefaultUsageInterval is how long a usage line covers.
const DefaultUsageInterval = time.Minute

// usageSum is one tenant's usage over an interval.
type usageSum struct {
	calls, fuel, cpuMicros, memoryKiBMs, egressRequests, egressBytes int64
	outcomes                                                         map[string]int64
}

func (u *usageSum) add(e Event) {
	u.calls++
	u.fuel += e.Fuel
	u.cpuMicros += e.Usage.CPUMicros()
	u.memoryKiBMs += e.Usage.MemoryKiBMs()
	u.egressRequests += int64(e.Egress.Requests)
	u.egressBytes += e.Egress.BytesSent + e.Egress.BytesReceived
	if u.outcomes == nil {
		u.outcomes = map[string]int64{}
	}
	u.outcomes[e.Outcome]++
}

// openUsageLog opens (creating, appending) the usage file, and writes a
// line per tenant every interval (DefaultUsageInterval when 0).
func openUsageLog(path string, interval time.Duration, r *Log) (*usageLog, error) {
	f, err := openAppend(path, "the usage log")
	if err != nil {
		return nil, err
	}
	if interval <= 0 {
		interval = DefaultUsageInterval
	}
	if r == nil {
		r = NewLog(io.Discard)
	}
	u := &usageLog{path: path, interval: interval, now: time.Now, w: f, log: r, tenants: map[string]*usageSum{},
		stop: make(chan struct{}), done: make(chan struct{})}
	u.from = u.now()
	go u.run()
	return u, nil
}

// openAppend opens path for appending, creating it (what names the file
// in the error).
func openAppend(path, what string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", what, err)
	}
	return f, nil
}

// OnCall implements Hook: it adds the call to its tenant's sums.
func (u *usageLog) OnCall(e Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.tenants[e.TenantID]
	if s == nil {
		if len(u.tenants) >= maxUsageTenants {
			if u.other == nil {
				u.other, u.others = &usageSum{}, map[string]struct{}{}
			}
			if len(u.others) < maxUsageTenants { // counted up to the bound
				u.others[e.TenantID] = struct{}{}
			}
			u.other.add(e)
			return
		}
		s = &usageSum{}
		u.tenants[e.TenantID] = s
	}
	s.add(e)
}

func (u *usageLog) run() {
	defer close(u.done)
	t := time.NewTicker(u.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			u.flush()
		case <-u.stop:
			u.flush()
			return
		}
	}
}

// flush writes the interval that ends now, a line per tenant in the order
// of their ids, and begins the next.
func (u *usageLog) flush() {
	u.mu.Lock()
	from, to := u.from, u.now()
	tenants, other, others := u.tenants, u.other, len(u.others)
	u.from, u.tenants, u.other, u.others = to, map[string]*usageSum{}, nil, nil
	u.mu.Unlock()
	var b []byte
	for _, id := range slices.Sorted(maps.Keys(tenants)) {
		b = usageLine(b, id, true, from, to, tenants[id], 0)
	}
	if other != nil {
		b = usageLine(b, "", false, from, to, other, others)
	}
	if len(b) == 0 {
		return
	}
	u.wmu.Lock()
	_, err := u.w.Write(b)
	u.wmu.Unlock()
	if err != nil {
		u.log.Line("error", "Cannot write the usage log: "+err.Error(), Field{"event", "usage-error"}, Field{"kind", "usage-error"})
	}
}

// usageLine appends one tenant's line (named: it has a tenantId; else
// the line of the tenants past the bound, others of them).
func usageLine(b []byte, tenant string, named bool, from, to time.Time, s *usageSum, others int) []byte {
	o := &ojson.Object{}
	o.Set("time", to.UTC().Format("2006-01-02T15:04:05.000Z"))
	o.Set("event", "usage")
	if named {
		o.Set("tenantId", tenant)
	} else {
		o.Set("otherTenants", others)
	}
	o.Set("from", from.UTC().Format("2006-01-02T15:04:05.000Z"))
	o.Set("to", to.UTC().Format("2006-01-02T15:04:05.000Z"))
	o.Set("calls", int(s.calls))
	outcomes := &ojson.Object{}
	for _, k := range slices.Sorted(maps.Keys(s.outcomes)) {
		outcomes.Set(k, int(s.outcomes[k]))
	}
	o.Set("outcomes", outcomes)
	o.Set("fuel", int(s.fuel))
	o.Set("cpuMs", json.RawMessage(micros(s.cpuMicros)))
	o.Set("memoryKiBMs", int(s.memoryKiBMs))
	o.Set("egressRequests", int(s.egressRequests))
	o.Set("egressBytes", int(s.egressBytes))
	return append(ojson.Append(b, o), '\n')
}

// micros writes whole microseconds as milliseconds, exactly (21 is
// "0.021").
func micros(us int64) string {
	ms, frac := us/1000, us%1000
	if frac == 0 {
		return strconv.FormatInt(ms, 10)
	}
	return strconv.FormatInt(ms, 10) + "." + fmt.Sprintf("%03d", frac)
}

// Reopen opens the usage file's path anew and writes on there, closing
// the file it wrote before (logrotate renames it, then signals); when the
// path cannot be opened the old file stays in use.
func (u *usageLog) Reopen() error {
	f, err := openAppend(u.path, "the usage log")
	if err != nil {
		return err
	}
	u.wmu.Lock()
	old := u.w
	u.w = f
	u.wmu.Unlock()
	return old.Close()
}

// Close writes the interval under way and closes the file. Safe twice.
func (u *usageLog) Close(ctx context.Context) error {
	var err error
	u.once.Do(func() {
		close(u.stop)
		select {
		case <-u.done:
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
		u.wmu.Lock()
		err = u.w.Close()
		u.wmu.Unlock()
	})
	return err
}

var _ Hook = (*usageLog)(nil)
