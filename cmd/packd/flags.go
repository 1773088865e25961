package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kindgi/packd/host"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/sandbox"
)

// loadFlags are the flags every command that loads a pack takes.
type loadFlags struct {
	index, moduleRoot, cacheDir string
	memoryMiB                   uint
}

func (l *loadFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.index, "index", os.Getenv("KINDGI_PACK_INDEX"), "the pack index (default $KINDGI_PACK_INDEX, else /app/index.json)")
	fs.StringVar(&l.moduleRoot, "module-root", "", "where module paths resolve (default: the index's directory)")
	fs.StringVar(&l.cacheDir, "cache-dir", defaultCacheDir(), `wazero's compilation cache ("" keeps it in memory)`)
	fs.UintVar(&l.memoryMiB, "memory-limit-mib", sandbox.DefaultMemoryLimitPages/16, "linear memory limit of every instance, MiB")
}

func defaultCacheDir() string {
	if d := os.Getenv("PACKD_CACHE_DIR"); d != "" {
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
	if l.memoryMiB == 0 || l.memoryMiB > 4096 {
		return host.Config{}, fmt.Errorf("--memory-limit-mib must be between 1 and 4096")
	}
	return host.Config{
		IndexPath:  l.index,
		ModuleRoot: l.moduleRoot,
		Sandbox: sandbox.Config{
			CacheDir:         l.cacheDir,
			MemoryLimitPages: uint32(l.memoryMiB * 16),
			Stdout:           guestOut,
			Stderr:           guestOut,
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
		return nil, fmt.Errorf("--%s is not valid JSON: %w", name, err)
	}
	return doc, nil
}
