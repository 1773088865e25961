package sandbox

import (
	"context"
	"encoding/binary"
	"reflect"
	"strconv"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/kindgi/packd/abi/guest/wire"
)

// Every pooled call in this package's tests checks its reset against the
// snapshot, byte for byte.
func init() { verifyResets = true }

// RaceBuild reports a build with the race detector (race_test.go).
const RaceBuild = raceBuild

// CanaryAfterEveryCall makes every pooled instance, after its call and
// before its reset, get a byte written on every page of its memory and
// every one of its exported globals set: what the next call must never
// see. It returns the function that turns it off.
func CanaryAfterEveryCall() func() {
	afterCall = func(m api.Module) {
		mem := m.Memory()
		for off := uint32(0); off < mem.Size(); off += 4096 {
			mem.WriteByte(off+off/4096%4093, 0xa5)
		}
		names := []string{"kindgi_fuel", "kindgi_stack"}
		for i := 0; i < 1000; i++ {
			names = append(names, "kindgi_g"+strconv.Itoa(i))
		}
		for _, name := range names {
			if g, ok := m.ExportedGlobal(name).(api.MutableGlobal); ok {
				g.Set(g.Get() ^ 0x5a5a)
			}
		}
	}
	return func() { afterCall = nil }
}

// TrimPools closes a module's idle instances put back before cutoff, as
// its janitor does after poolIdleFor.
func TrimPools(m *Module, cutoff time.Time) {
	if m.pool != nil {
		m.pool.trim(cutoff)
	}
}

// ExpireSnapshot drops a pooled module's snapshot as if it had aged out.
func ExpireSnapshot(m *Module) {
	if m.pool != nil {
		m.pool.expire(time.Now().Add(time.Hour))
	}
}

// ResetModes names the ways a pooled instance can be reset: "auto" (what
// this system does), "scan" (PAGEMAP_SCAN), "pagemap" (reading
// /proc/self/pagemap, as on Linux before 6.7), "copy" (the whole snapshot
// copied back) and "portable" (wazero's own memory and no snapshot image,
// as on systems without mmap and memfd).
var ResetModes = []string{"auto", "scan", "pagemap", "copy", "portable"}

// UseReset makes pooled instances of sandboxes made from now on reset
// their way; it returns the function that goes back to "auto".
func UseReset(mode string) func() {
	forceReset, portableMemory = map[string]int{"scan": resetScan, "pagemap": resetPagemap, "copy": resetCopy, "portable": resetCopy}[mode], mode == "portable"
	return func() { forceReset, portableMemory = resetAuto, false }
}

// BreakResets makes pooled instances go back to the pool as their calls
// left them (no reset, no check): what the isolation tests must catch. It
// returns the function that mends them.
func BreakResets() func() {
	skipResets, verifyResets = true, false
	return func() { skipResets, verifyResets = false, true }
}

// FillPool makes n instances of a pooled module at once and puts them in
// its pool, as a burst of n concurrent calls would.
func FillPool(m *Module, n int) error {
	var made []*pooledInstance
	for i := 0; i < n; i++ {
		pi, _, err := m.pool.get(context.Background(), nil, time.Now(), m.sb.cfg.DefaultFuel)
		if err != nil {
			return err
		}
		made = append(made, pi)
	}
	for _, pi := range made {
		pi.since = time.Unix(0, m.pool.clock.Load())
		m.pool.keep(pi)
	}
	return nil
}

// SetPoolClock sets the time a pooled module's calls see (the janitor's).
func SetPoolClock(m *Module, t time.Time) { m.pool.clock.Store(t.UnixNano()) }

// InstancesMade is how many instances a pooled module has made.
func InstancesMade(m *Module) int64 { return m.pool.made.Load() }

// RefreshSnapshot runs what a pooled module's janitor does about its
// snapshot at now.
func RefreshSnapshot(m *Module, now time.Time) { m.pool.refresh(now) }

// SnapshotTaken is when a pooled module's snapshot was taken (zero: none).
func SnapshotTaken(m *Module) time.Time {
	if snap := m.pool.snap.Load(); snap != nil {
		return snap.taken
	}
	return time.Time{}
}

// SnapshotMaxAge is how long a snapshot serves.
const SnapshotMaxAge = snapshotMaxAge

// PassRuns is how many times this process ran the fuel pass (not taken
// from the pass's cache).
func PassRuns() int64 { return passRuns.Load() }

// CodePath is the file a module's code is mapped from once warm ("": none).
func CodePath(m *Module) string {
	if m.passName == "" {
		return ""
	}
	return m.sb.seals.passPath(m.passName) + ".code"
}

// KeptBodies is how many of a module's function bodies wazero still holds
// (-1: its layout is not the one dropBodies knows).
func KeptBodies(m *Module) int {
	code, ok := follow(reflect.ValueOf(m.compiled), "module", "CodeSection")
	if !ok {
		return -1
	}
	kept := 0
	for i := range code.Len() {
		if body, ok := unexported(code.Index(i), "Body"); !ok {
			return -1
		} else if body.Len() > 0 {
			kept++
		}
	}
	return kept
}

// ForgetVerified forgets which cache entries this process verified, as a
// new process would not know.
func ForgetVerified() {
	verifiedEntries.Lock()
	defer verifiedEntries.Unlock()
	clear(verifiedEntries.m)
}

// EntriesReadWhole is how many cache entries this process read whole to
// check them against their seals.
func EntriesReadWhole() int64 { return entriesReadWhole.Load() }

// DescribeRuns is how many times this process ran a module's load-time code
// to describe it (not taken from the cache).
func DescribeRuns() int64 { return describeRuns.Load() }

// DataTaken reports whether a module's data segments were taken out of
// what wazero instantiates.
func DataTaken(m *Module) bool {
	m.instMu.RLock()
	defer m.instMu.RUnlock()
	return m.dataTaken
}

// MakePooled makes an instance of a pooled module from its snapshot (a
// pool miss) and puts it in the pool, where the next call takes it.
func MakePooled(m *Module) error {
	pi, err := m.pool.fresh(context.Background(), nil, MaxFuel)
	if err != nil {
		return err
	}
	m.pool.put(pi, time.Unix(0, m.pool.clock.Load()))
	return nil
}

// MaxDetailBytes is maxDetailBytes, for the tape tests.
const MaxDetailBytes = maxDetailBytes

// JSONScanCases and RandomJSON are jsonscan_test.go's texts, for tests
// that send them through a guest.
var (
	JSONScanCases = jsonScanCases
	RandomJSON    = randomJSON
)

// RequestFieldsOf is what request_fields writes for the request b (nil:
// it answers -1), and RequestFieldCase one of requestfields_test.go's.
func RequestFieldsOf(b []byte) []byte {
	var f fieldSpans
	if !findFields(b, func(int) {}, &f) {
		return nil
	}
	out := make([]byte, 0, wire.FieldCount*wire.FieldSize)
	for _, fl := range f {
		for _, v := range fl {
			out = binary.LittleEndian.AppendUint32(out, v)
		}
	}
	return out
}

func RequestFieldCase(i int) []byte { return []byte(requestFieldCases[i].request) }

// RandomRequest is requestfields_test.go's randomRequest.
var RandomRequest = randomRequest

// HasFields reports whether r comes with where its fields lie.
func HasFields(r Request) bool { return r.fields != nil }
