package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/oci"
)

// watchDebounce is how long --watch waits after a change for the rest of
// it (a sync tool writes the index and the modules one after another).
const watchDebounce = 300 * time.Millisecond

// watchPack asks for a reload (ask, as SIGHUP does) when the pack on disk
// changes: the index, its signature or a module it names, written in
// place or swapped in (the kubelet flips a ConfigMap's ..data symlink),
// watched in their directories, debounced, and only when what the paths
// now hold differs from what they held at the last look (events that
// change nothing, a touch, ask for nothing). It runs until ctx is done.
func watchPack(ctx context.Context, index, moduleRoot, signature string, ask func(), warn func(string)) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		warn("--watch cannot watch the pack's files: " + err.Error())
		return
	}
	defer w.Close()
	if moduleRoot == "" {
		moduleRoot = filepath.Dir(index)
	}
	if signature == "" {
		signature = index + ".sig"
	}
	watched := map[string]bool{}
	watchDirs := func(modules []string) {
		dirs := []string{filepath.Dir(index), filepath.Dir(signature), moduleRoot}
		for _, m := range modules {
			dirs = append(dirs, filepath.Dir(filepath.Join(moduleRoot, filepath.FromSlash(m))))
		}
		for _, d := range dirs {
			if !watched[d] && w.Add(d) == nil {
				watched[d] = true
			}
		}
	}
	last, modules := packPrint(index, moduleRoot, signature)
	watchDirs(modules)
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			timer = time.After(watchDebounce)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			warn("--watch: " + err.Error())
		case <-timer:
			timer = nil
			if now, modules := packPrint(index, moduleRoot, signature); now != last {
				last = now
				ask()
				watchDirs(modules) // a module may have moved to a directory of its own
			}
		}
	}
}

// packPrint is what the pack's files hold now, in short: the index's and
// the signature's bytes, and each module's size, time and file (its inode:
// a swapped-in file is another, whatever its time); and the module paths
// the index names (none when it cannot be read), read once for both.
func packPrint(index, moduleRoot, signature string) (string, []string) {
	h := sha256.New()
	var modules []string
	for _, f := range []string{index, signature} {
		b, _ := os.ReadFile(f)
		fmt.Fprintf(h, "%s %d %x\n", f, len(b), sha256.Sum256(b))
		if f == index && b != nil {
			idx, _ := host.ValidateIndex(b)
			modules = idx.ModulePaths()
		}
	}
	for _, m := range modules {
		fi, err := os.Stat(filepath.Join(moduleRoot, filepath.FromSlash(m)))
		if err != nil {
			fmt.Fprintf(h, "%s missing\n", m)
			continue
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		fmt.Fprintf(h, "%s %d %d %d\n", m, fi.Size(), fi.ModTime().UnixNano(), ino)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), modules
}

// defaultOCIPoll is how often serve --watch asks a registry for the digest
// of the tag it pulled, by default.
const defaultOCIPoll = 30 * time.Second

// watchTag asks for a reload when the tag p pulls names another manifest
// than the last one pulled, asking the registry every interval (a digest
// never moves: nothing is asked). A pull that failed (a registry's hiccup,
// a spoilt blob) is tried again, each time after twice as many intervals,
// up to 64, so a bad manifest is not fetched at every look; a pack that
// pulled but did not load is not, until the tag moves again. It runs until
// ctx is done.
func watchTag(ctx context.Context, p *oci.Puller, interval time.Duration, ask func(), warn func(string)) {
	if !p.Moves() {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	asked, backoff, skip := "", 1, 0 // the digest asked for that has not pulled
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d, err := p.Resolve(ctx)
		if err != nil {
			if !failing && ctx.Err() == nil { // said once, until the registry answers again
				warn("--watch: " + err.Error())
			}
			failing = true
			continue
		}
		failing = false
		switch {
		case d == p.Last():
			asked = ""
		case d != asked:
			asked, backoff, skip = d, 1, 0
			ask()
		case skip > 0:
			skip--
		default:
			backoff = min(2*backoff, 64)
			skip = backoff - 1
			ask()
		}
	}
}
