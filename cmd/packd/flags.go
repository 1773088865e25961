package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/oci"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/sandbox"
)

// loadFlags are the flags every command that loads a pack takes.
type loadFlags struct {
	index, moduleRoot, cacheDir string
	memoryMiB, maxModuleMiB     uint
	memoryBudgetMiB             int64
	poolSize                    string
	// poolAuto is the pool size "auto" means: serve sets it to its
	// concurrency cap; invoke to 1, so that its call runs from the
	// snapshot as a pooled serve call does (fuel and all); check and
	// index have no call to pool.
	poolAuto                    int
	fuel, loadFuel              int64
	compileTimeout, loadTimeout time.Duration
	// Outbound HTTP of pack code (issue 15): what the operator allows
	// beyond each tool's network policy, and the per-call caps.
	netUnrestricted   bool
	netAllow          string
	netMaxRequests    int
	netMaxResponseMiB int64
	// trust are the public keys the index must be signed by (--trust, as
	// many as given); signature is where its signature is.
	trust     []string
	signature string
	// An --index of oci://…: how it is pulled (package oci), and, once
	// config made it, its puller (watched by serve --watch) and who is
	// told of each pull (nil: nobody).
	oci    ociFlags
	puller *oci.Puller
	onPull func(oci.Pulled)
	// fs is where the flags were registered; cacheFromEnv: the cache
	// directory's default came from $PACKD_CACHE_DIR (so it was asked for).
	fs           *flag.FlagSet
	cacheFromEnv bool
	// cacheWarning says why the default cache directory is not used (config
	// then keeps the compilation cache in memory); "" when it is.
	cacheWarning string
	// cacheReadOnly: the cache directory cannot be written but holds a
	// cache packd made (an image's, made by packd check): it is used as it
	// is (sandbox.Config.CacheReadOnly); cacheNote says so.
	cacheReadOnly bool
	cacheNote     string
}

// register adds the flags to fs; their defaults read getenv.
func (l *loadFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	l.fs, l.cacheFromEnv = fs, getenv("PACKD_CACHE_DIR") != ""
	fs.StringVar(&l.index, "index", getenv("KINDGI_PACK_INDEX"), "the pack index (default $KINDGI_PACK_INDEX, else /app/index.json)")
	fs.StringVar(&l.moduleRoot, "module-root", "", "where module paths resolve (default: the index's directory)")
	if t := getenv("PACKD_TRUST"); t != "" {
		l.trust = strings.Split(t, ",")
	}
	fs.Func("trust", "a public key (PEM, packd keygen's NAME.pub) the index must be signed by; repeat for more; every load and reload then refuses an unsigned pack (default $PACKD_TRUST, comma-separated)", func(v string) error {
		l.trust = append(l.trust, v)
		return nil
	})
	fs.StringVar(&l.signature, "signature", "", "the index's signature (default: the index's path and .sig)")
	l.oci.register(fs, getenv, true)
	fs.StringVar(&l.cacheDir, "cache-dir", defaultCacheDir(getenv), `wazero's compilation cache ("" keeps it in memory)`)
	fs.UintVar(&l.memoryMiB, "memory-limit-mib", sandbox.DefaultMemoryLimitPages/16, "linear memory limit of every instance, MiB")
	fs.Int64Var(&l.fuel, "fuel", envInt(getenv, "PACKD_FUEL", sandbox.DefaultFuel), "fuel budget of a call whose tool has no limits.fuel (default $PACKD_FUEL)")
	fs.Int64Var(&l.memoryBudgetMiB, "memory-budget-mib", envInt(getenv, "PACKD_MEMORY_BUDGET_MIB", defaultMemoryBudget(nil)>>20),
		"memory the process may use, MiB: half for instances' linear memory (a call that does not fit answers 503 overloaded), half the Go heap's soft limit (default $PACKD_MEMORY_BUDGET_MIB, else 3/4 of the cgroup's or the machine's memory)")
	fs.StringVar(&l.poolSize, "pool-size", envOr(getenv, "PACKD_POOL_SIZE", "auto"),
		`instances of each module kept between calls, reset to their snapshot after _initialize; 0: a fresh instance for every call (default $PACKD_POOL_SIZE, else "auto": serve's concurrency cap, invoke's 1)`)
	fs.UintVar(&l.maxModuleMiB, "max-module-mib", sandbox.DefaultMaxModuleBytes>>20, "largest module packd loads, MiB")
	fs.DurationVar(&l.compileTimeout, "compile-timeout", sandbox.DefaultCompileTimeout, "longest a module's compilation may take")
	fs.DurationVar(&l.loadTimeout, "load-timeout", sandbox.DefaultLoadTimeout, "longest a module's load-time code (start, _initialize, kindgi_describe) may run")
	fs.Int64Var(&l.loadFuel, "load-fuel", sandbox.DefaultLoadFuel, "fuel budget of a module's load-time code")
	fs.BoolVar(&l.netUnrestricted, "network-unrestricted", envBool(getenv, "PACKD_NETWORK_UNRESTRICTED"),
		`let tools whose index entry says network {"kind": "unrestricted"} reach any public host (default $PACKD_NETWORK_UNRESTRICTED; without it such a pack does not load)`)
	fs.StringVar(&l.netAllow, "network-allow", getenv("PACKD_NETWORK_ALLOW"),
		"special addresses pack code may reach nonetheless, comma-separated IPs or CIDR ranges, e.g. 10.0.0.0/8 for services in the cluster (default $PACKD_NETWORK_ALLOW; loopback, private, link-local and other special addresses are refused)")
	fs.IntVar(&l.netMaxRequests, "network-max-requests", int(envInt(getenv, "PACKD_NETWORK_MAX_REQUESTS", int64(egressDefaults.MaxRequests))),
		"outbound HTTP requests one call may make, redirects included (default $PACKD_NETWORK_MAX_REQUESTS)")
	fs.Int64Var(&l.netMaxResponseMiB, "network-max-response-mib", envInt(getenv, "PACKD_NETWORK_MAX_RESPONSE_MIB", egressDefaults.MaxResponseBytes>>20),
		"largest response body one outbound request may bring, MiB; a call may receive four times that (default $PACKD_NETWORK_MAX_RESPONSE_MIB)")
}

// envBool reads a boolean environment variable ("1", "true", ...); unset
// or unreadable is false.
func envBool(getenv func(string) string, name string) bool {
	b, _ := strconv.ParseBool(getenv(name))
	return b
}

// egressDefaults are the per-call caps of outbound HTTP by default.
var egressDefaults = host.NetworkConfig{MaxRequests: host.DefaultMaxRequests, MaxResponseBytes: host.DefaultMaxResponseBytes}

// networkAllow reads --network-allow: IPs and CIDR ranges.
func (l *loadFlags) networkAllow() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(l.netAllow, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if ip, err := netip.ParseAddr(f); err == nil {
			out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("--network-allow (or PACKD_NETWORK_ALLOW): %q is neither an IP address nor a CIDR range", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// envInt reads an integer environment variable; unset gives def, and a bad
// value gives -1, which the range checks refuse.
func envInt(getenv func(string) string, name string, def int64) int64 {
	v := getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// envDuration reads a duration environment variable; unset gives def, and
// a bad value gives -1, which the range checks refuse.
func envDuration(getenv func(string) string, name string, def time.Duration) time.Duration {
	v := getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return -1
	}
	return d
}

// pool is the pool size the flag asks for.
func (l *loadFlags) pool() (int, bool) {
	if l.poolSize == "auto" {
		return l.poolAuto, true
	}
	n, err := strconv.Atoi(l.poolSize)
	return n, err == nil && n >= 0 && n <= 4096
}

// setGoMemoryLimit gives the Go heap its half of the memory budget as a
// soft limit: the garbage collector works harder as the heap nears it.
func (l *loadFlags) setGoMemoryLimit() {
	debug.SetMemoryLimit(l.memoryBudgetMiB << 20 / 2)
}

// check lists what is wrong with the flags.
func (l *loadFlags) check() []string {
	var problems []string
	if l.memoryMiB == 0 || l.memoryMiB > 4096 {
		problems = append(problems, "--memory-limit-mib must be between 1 and 4096")
	}
	if err := sandbox.ValidateFuel(l.fuel); err != nil {
		problems = append(problems, "--fuel (or PACKD_FUEL) "+err.Error())
	}
	if err := sandbox.ValidateFuel(l.loadFuel); err != nil {
		problems = append(problems, "--load-fuel "+err.Error())
	}
	if l.memoryBudgetMiB <= 0 {
		problems = append(problems, "--memory-budget-mib (or PACKD_MEMORY_BUDGET_MIB) must be a positive integer")
	} else if l.memoryBudgetMiB/2 < int64(l.memoryMiB) {
		problems = append(problems, fmt.Sprintf("--memory-budget-mib %d leaves less than one instance's --memory-limit-mib (%d) for instances (half the budget)", l.memoryBudgetMiB, l.memoryMiB))
	}
	if _, ok := l.pool(); !ok {
		problems = append(problems, fmt.Sprintf(`--pool-size (or PACKD_POOL_SIZE) must be "auto" or between 0 and 4096, got %q`, l.poolSize))
	}
	if l.maxModuleMiB == 0 || l.maxModuleMiB > 1024 {
		problems = append(problems, "--max-module-mib must be between 1 and 1024")
	}
	if l.compileTimeout <= 0 {
		problems = append(problems, "--compile-timeout must be positive")
	}
	if l.loadTimeout <= 0 {
		problems = append(problems, "--load-timeout must be positive")
	}
	if _, err := l.networkAllow(); err != nil {
		problems = append(problems, err.Error())
	}
	if l.netMaxRequests < 1 || l.netMaxRequests > 10000 {
		problems = append(problems, "--network-max-requests (or PACKD_NETWORK_MAX_REQUESTS) must be between 1 and 10000")
	}
	if l.netMaxResponseMiB < 1 || l.netMaxResponseMiB > 256 {
		problems = append(problems, "--network-max-response-mib (or PACKD_NETWORK_MAX_RESPONSE_MIB) must be between 1 and 256")
	}
	return append(problems, l.oci.check(l)...)
}

// cacheAskedFor reports whether the operator named the cache directory
// (--cache-dir or $PACKD_CACHE_DIR) rather than taking the default.
func (l *loadFlags) cacheAskedFor() bool {
	asked := l.cacheFromEnv
	if l.fs != nil {
		l.fs.Visit(func(f *flag.Flag) { asked = asked || f.Name == "cache-dir" })
	}
	return asked
}

// cacheUsable makes the cache directory if it is missing and checks that
// a file can be written in it.
func cacheUsable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".packd-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

func defaultCacheDir(getenv func(string) string) string {
	if d := getenv("PACKD_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "packd", "wazero")
}

func (l *loadFlags) config(guestOut io.Writer) (host.Config, error) {
	if l.index == "" {
		l.index = "/app/index.json"
	}
	if problems := l.check(); len(problems) > 0 {
		return host.Config{}, errors.New(strings.Join(problems, "; "))
	}
	if l.cacheDir != "" {
		if err := cacheUsable(l.cacheDir); err != nil && sandbox.IsCache(l.cacheDir) {
			l.cacheReadOnly = true
			l.cacheNote = fmt.Sprintf("The compilation cache directory %s cannot be written (%v): it is used as it is, read-only; a module it lacks compiles at every start", l.cacheDir, err)
		} else if err != nil {
			if l.cacheAskedFor() {
				return host.Config{}, fmt.Errorf("--cache-dir (or PACKD_CACHE_DIR) %s cannot be used: %v", l.cacheDir, err)
			}
			l.cacheWarning = fmt.Sprintf("The compilation cache directory %s cannot be used (%v): modules compile on every start; set --cache-dir or PACKD_CACHE_DIR to a writable directory", l.cacheDir, err)
			l.cacheDir = ""
		}
	}
	pool, _ := l.pool()
	allow, _ := l.networkAllow()
	trust, err := readTrust(l.trust)
	if err != nil {
		return host.Config{}, err
	}
	source, err := l.source()
	if err != nil {
		return host.Config{}, err
	}
	return host.Config{
		Source: source,
		Network: host.NetworkConfig{
			Unrestricted:     l.netUnrestricted,
			AllowAddresses:   allow,
			MaxRequests:      l.netMaxRequests,
			MaxResponseBytes: l.netMaxResponseMiB << 20,
			MaxReceivedBytes: 4 * l.netMaxResponseMiB << 20,
		},
		IndexPath:     l.index,
		ModuleRoot:    l.moduleRoot,
		Trust:         trust,
		SignaturePath: l.signature,
		Sandbox: sandbox.Config{
			CacheDir:         l.cacheDir,
			CacheReadOnly:    l.cacheReadOnly,
			MemoryLimitPages: uint32(l.memoryMiB * 16),
			Stdout:           guestOut,
			Stderr:           guestOut,
			DefaultFuel:      l.fuel,
			MaxModuleBytes:   int(l.maxModuleMiB) << 20,
			CompileTimeout:   l.compileTimeout,
			LoadTimeout:      l.loadTimeout,
			LoadFuel:         l.loadFuel,
			MemoryBudget:     l.memoryBudgetMiB << 20 / 2,
			PoolSize:         pool,
		},
	}, nil
}

// jsonArg reads a flag value that is JSON, or @file, or @- for stdin.
func jsonArg(name, v string, stdin io.Reader) (any, error) {
	var data []byte
	var err error
	switch {
	case v == "@-":
		data, err = io.ReadAll(stdin)
	case strings.HasPrefix(v, "@"):
		data, err = os.ReadFile(v[1:])
	default:
		data = []byte(v)
	}
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	doc, err := ojson.Decode(data)
	if err != nil {
		var se *ojson.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("--%s is not valid JSON: %s", name, se.Detail())
		}
		return nil, fmt.Errorf("--%s is not valid JSON", name)
	}
	return doc, nil
}
