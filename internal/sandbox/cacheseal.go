package sandbox

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The compilation cache's seals. wazero's file cache holds native code that
// packd maps executable, and part of an entry (its table of function
// offsets) is outside wazero's own checksum: a byte changed there runs
// other code than was compiled. So every entry gets a seal beside it,
// <entry>.seal, an HMAC-SHA256 of its name and bytes under the cache's key
// (cacheKeyFile in CacheDir, made at first use, readable by its owner
// alone). Before a compilation reads the cache, every entry this sandbox
// has not verified yet is checked: by its seal's stamp when it has not
// changed since it was last read whole (cachestamp.go), else read whole
// against the seal, and stamped; one without a seal, or
// whose seal does not match, is removed with it (Config.CacheRepaired says
// how many), and the module is compiled anew. After a compilation the
// entries without a seal, the ones it wrote, are sealed. An entry without a
// seal is left alone while another compilation of this sandbox is running,
// since it may be that one's, not yet sealed.

const (
	cacheKeyFile = "packd-cache.key"
	sealSuffix   = ".seal"
	cacheKeyLen  = 32
)

type cacheSeals struct {
	dir string
	key []byte
	// readOnly: nothing is written in dir (Config.CacheReadOnly).
	readOnly bool
	// versions are the directories of wazero's versions whose entries are
	// verified: this build's (see wazeroDir), else all of them.
	versions []string

	mu      sync.Mutex
	running int // compilations between begin and end

	pruned sync.Once // the pass's cache (passcache.go)
}

// verifiedEntries are the entries verified or sealed in this process, by
// path, with what each looked like then: every sandbox of the process
// over the same directory reads an entry once, not once each (the tests
// make hundreds of sandboxes over one cache, and each read it all).
var verifiedEntries = struct {
	sync.Mutex
	m map[string]entryStamp
}{m: map[string]entryStamp{}}

func isVerified(path string, stamp entryStamp) bool {
	verifiedEntries.Lock()
	defer verifiedEntries.Unlock()
	return verifiedEntries.m[path] == stamp
}

func setVerified(path string, stamp entryStamp, ok bool) {
	verifiedEntries.Lock()
	defer verifiedEntries.Unlock()
	if ok {
		verifiedEntries.m[path] = stamp
	} else {
		delete(verifiedEntries.m, path)
	}
}

// entryStamp is what an entry looked like when it was verified: one that
// changed since (its size, times or inode: replaced, or written in place)
// is verified again.
type entryStamp struct {
	size       int64
	mod        time.Time
	ctime, ino int64
	ctimeNanos int64
}

// IsCache reports whether dir holds a compilation cache packd made (its
// key): one packd cannot write can still be used as it is
// (Config.CacheReadOnly).
func IsCache(dir string) bool {
	key, err := readRegular(filepath.Join(dir, cacheKeyFile))
	return err == nil && len(key) == cacheKeyLen
}

// openSeals reads the cache's key, making it when there is none (or when
// it is not a key: every seal made with the old one then fails, and its
// entry is compiled again).
func openSeals(dir string, readOnly bool) (*cacheSeals, error) {
	path := filepath.Join(dir, cacheKeyFile)
	if readOnly {
		key, err := readRegular(path)
		if err != nil || len(key) != cacheKeyLen {
			return nil, fmt.Errorf("the read-only cache %s has no key (%v, %d bytes): it was not made by packd", dir, err, len(key))
		}
		return &cacheSeals{dir: dir, key: key, readOnly: true}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := readRegular(path)
	if err != nil || len(key) != cacheKeyLen {
		if err := makeKey(path, errors.Is(err, fs.ErrNotExist)); err != nil {
			return nil, fmt.Errorf("making the cache key %s: %w", path, err)
		}
		if key, err = readRegular(path); err != nil || len(key) != cacheKeyLen {
			return nil, fmt.Errorf("reading the cache key %s: %v (%d bytes)", path, err, len(key))
		}
	}
	return &cacheSeals{dir: dir, key: key}, nil
}

// makeKey writes a new random key at path: beside none (missing: another
// process making one at once wins, and both read what is on disk), or over
// a file that is not a key.
func makeKey(path string, missing bool) error {
	key := make([]byte, cacheKeyLen)
	_, _ = rand.Read(key)
	tmp, err := os.CreateTemp(filepath.Dir(path), cacheKeyFile+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(key)
	if err := errors.Join(werr, tmp.Close(), os.Chmod(tmp.Name(), 0o600)); err != nil {
		return err
	}
	if !missing {
		return os.Rename(tmp.Name(), path)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// useVersions picks the directories whose entries are verified, once
// wazero has made its own: only this build's wazero reads the cache, and a
// directory shared by several versions of packd holds entries of each.
func (c *cacheSeals) useVersions() {
	if own := wazeroDir(c.dir); own != "" {
		if fi, err := os.Stat(own); err == nil && fi.IsDir() {
			c.versions = []string{own}
			return
		}
	}
	c.versions, _ = filepath.Glob(filepath.Join(c.dir, "wazero-*"))
}

// wazeroDir is the directory wazero keeps this build's entries in under
// dir, named as wazero names it (wazero-<its version>-<arch>-<os>, the
// version from the build's dependencies), or "" when the build does not
// say; useVersions checks that it exists.
func wazeroDir(dir string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := ""
	for _, dep := range info.Deps {
		if strings.Contains(dep.Path, "github.com/tetratelabs/wazero") {
			v = dep.Version
		}
	}
	if v == "" || v == "(devel)" {
		return ""
	}
	return filepath.Join(dir, "wazero-"+v+"-"+runtime.GOARCH+"-"+runtime.GOOS)
}

// begin verifies the entries not verified yet before a compilation reads
// the cache, and reports how many it removed.
func (c *cacheSeals) begin() int {
	if c.readOnly {
		return 0 // checked whole when the sandbox was made (checkReadOnly)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	removed := c.walk(c.running == 0)
	c.running++
	return removed
}

// end seals what a compilation wrote.
func (c *cacheSeals) end() {
	if c.readOnly {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
	c.walk(false)
}

// checkReadOnly checks every entry of a read-only cache against its seal
// and says how many do not match (or have none): none can be removed, so
// wazero must not read any.
func (c *cacheSeals) checkReadOnly() (bad int) {
	c.eachFile(func(path, name string, e fs.DirEntry) {
		if strings.HasSuffix(name, sealSuffix) {
			return
		}
		info, err := e.Info()
		seal, serr := readRegular(path + sealSuffix)
		if err != nil || serr != nil {
			bad++
			return
		}
		if stamp := stampOf(info); !c.stamped(name, seal, stamp) {
			if mac, _ := c.mac(path, name); !contentMatches(mac, seal) {
				bad++
			}
		}
	})
	return bad
}

// walk verifies every entry not verified yet: it removes one whose seal
// does not match, and one without a seal when unsealed is true; otherwise
// it seals an entry that has none. It reports how many it removed.
func (c *cacheSeals) walk(unsealed bool) (removed int) {
	c.eachFile(func(path, name string, e fs.DirEntry) {
		if entry, ok := strings.CutSuffix(name, sealSuffix); ok {
			if _, err := os.Lstat(filepath.Join(filepath.Dir(path), entry)); errors.Is(err, fs.ErrNotExist) {
				_ = os.Remove(path) // a seal whose entry is gone
			}
			return
		}
		info, err := e.Info()
		if err != nil {
			return
		}
		stamp := stampOf(info)
		if isVerified(path, stamp) {
			return
		}
		seal, err := readRegular(path + sealSuffix)
		if err == nil && c.stamped(name, seal, stamp) {
			setVerified(path, stamp, true)
			return
		}
		mac, read := c.mac(path, name)
		switch {
		case err == nil && contentMatches(mac, seal):
			setVerified(path, stamp, true)
			if again := c.sealFor(path, name, mac, stamp); !bytes.Equal(again, seal) {
				_ = writeWhole(path+sealSuffix, again) // else read whole again next boot
			}
		case err == nil || unsealed:
			setVerified(path, stamp, false)
			if os.Remove(path) == nil {
				removed++
			}
			_ = os.Remove(path + sealSuffix)
		default: // written by a compilation of ours: seal it
			if read && writeWhole(path+sealSuffix, c.sealFor(path, name, mac, stamp)) == nil {
				setVerified(path, stamp, true)
			}
		}
	})
	return removed
}

// eachFile calls fn with every regular file of the versions' directories,
// entries and seals, but those a write has not finished (.tmp).
func (c *cacheSeals) eachFile(fn func(path, name string, e fs.DirEntry)) {
	for _, v := range c.versions {
		entries, _ := os.ReadDir(v)
		for _, e := range entries {
			if name := e.Name(); e.Type().IsRegular() && !strings.HasSuffix(name, ".tmp") {
				fn(filepath.Join(v, name), name, e)
			}
		}
	}
}

// entriesReadWhole counts the entries mac read, for the tests.
var entriesReadWhole atomic.Int64

// mac is the seal an entry should have: its name and bytes, read whole.
func (c *cacheSeals) mac(path, name string) ([]byte, bool) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	entriesReadWhole.Add(1)
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(name))
	h.Write([]byte{0})
	if _, err := io.Copy(h, f); err != nil {
		return nil, false
	}
	return h.Sum(nil), true
}

var errNotRegular = errors.New("not a regular file")

// openRegular opens the file at path for reading when it is a regular
// file (openFlags): a FIFO put in an entry's place would block a read for
// ever, a device would read what it likes.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return f, st, nil
}

// maxSealedFile bounds what readRegular reads: a seal is 104 bytes, a
// pass entry a few times its module (which MaxModuleBytes bounds) at
// most.
const maxSealedFile = 1 << 30

// readRegular reads the file at path whole when it is a regular file
// (openRegular) of at most maxSealedFile bytes.
func readRegular(path string) ([]byte, error) {
	f, st, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxSealedFile {
		return nil, fmt.Errorf("%s: %d bytes, over %d", path, st.Size(), maxSealedFile)
	}
	b := make([]byte, st.Size())
	n, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF {
		err = nil // it shrank: the seal says whether what is left will do
	}
	return b[:n], err
}

// writeWhole writes a file (a seal, an entry of the pass's cache) whole or
// not at all.
func writeWhole(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
