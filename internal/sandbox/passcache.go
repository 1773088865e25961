package sandbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kindgi/packd/internal/sandbox/internal/instrument"
)

// The pass's cache: what the fuel pass made of a module, kept beside the
// compilation cache by the module's content, so a boot of an unchanged
// module does not run the pass again (it was half of a warm boot's CPU:
// 180 ms a Go module on this VM). An entry is the pass's Info (JSON, its
// length first as 4 bytes), the instrumented module, then an HMAC-SHA256 of
// the entry's name and all of that under the cache's key (cacheseal.go): a
// changed byte could take the fuel out of a module, so an entry whose seal
// does not match is not used, and is written anew. Its name is a SHA-256 of
// the packd executable (another build may instrument differently: a fixed
// pass version would have to be bumped by hand, and a stale entry would
// skip a fix), the pass's options and the module's bytes; entries live in
// a directory per executable (its hash's first 16 hex digits), and a
// directory of another executable not used for passKeep is removed when a
// sandbox first uses the cache: an upgraded packd, or a rebuilt test
// binary, leaves no entries behind for ever.

const (
	passDir  = "packd-pass"
	passKeep = time.Hour
)

// passKey is the name of the entry for wasm under opt: "" when the
// executable cannot be read (no entry is read or written).
func passKey(wasm []byte, opt instrument.Options) string {
	exe := exeID()
	if exe == "" {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(exe))
	var o [17]byte
	binary.LittleEndian.PutUint64(o[0:], uint64(opt.MaxTableElements))
	binary.LittleEndian.PutUint64(o[8:], uint64(opt.MaxStackBytes))
	if opt.FunctionImportsOnly {
		o[16] = 1
	}
	h.Write(o[:])
	h.Write(wasm)
	return hex.EncodeToString(h.Sum(nil))
}

// passRuns counts the pass's runs, for the tests.
var passRuns atomic.Int64

// exeID is a SHA-256 of this executable, in hex ("" when it cannot be
// read).
var exeID = sync.OnceValue(func() string {
	path, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
})

// exeDir is the directory of this executable's entries under passDir.
func exeDir() string { return exeID()[:16] }

// passPath is where the entry name is.
func (c *cacheSeals) passPath(name string) string {
	return filepath.Join(c.dir, passDir, exeDir(), name)
}

// prunePass marks this executable's directory used, and removes those of
// other executables not used for passKeep; once per sandbox.
func (c *cacheSeals) prunePass() {
	if c.readOnly {
		return
	}
	c.pruned.Do(func() {
		root := filepath.Join(c.dir, passDir)
		now := time.Now()
		_ = os.MkdirAll(filepath.Join(root, exeDir()), 0o700)
		_ = os.Chtimes(filepath.Join(root, exeDir()), now, now)
		dirs, _ := os.ReadDir(root)
		for _, d := range dirs {
			if info, err := d.Info(); err == nil && d.IsDir() && d.Name() != exeDir() && now.Sub(info.ModTime()) > passKeep {
				_ = os.RemoveAll(filepath.Join(root, d.Name()))
			}
		}
	})
}

func (c *cacheSeals) passSeal(name string, b []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(passDir + "/" + exeDir() + "/" + name))
	h.Write([]byte{0})
	h.Write(b)
	return h.Sum(nil)
}

// loadSealed reads the file name of this executable's directory, whose
// last 32 bytes are its seal: the bytes before them, or false when there
// is no such file or its seal does not match.
func (c *cacheSeals) loadSealed(name string) ([]byte, bool) {
	b, err := readRegular(c.passPath(name))
	if err != nil || len(b) < sha256.Size {
		return nil, false
	}
	body, seal := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	return body, hmac.Equal(seal, c.passSeal(name, body))
}

// saveSealed writes body and its seal as the file name of this
// executable's directory, whole or not at all (another process writing
// the same file at once writes the same bytes); the seal goes in body's
// spare capacity if it has room.
func (c *cacheSeals) saveSealed(name string, body []byte) error {
	if c.readOnly {
		return nil
	}
	b := append(body, c.passSeal(name, body)...)
	if err := os.MkdirAll(filepath.Dir(c.passPath(name)), 0o700); err != nil {
		return err
	}
	return writeWhole(c.passPath(name), b)
}

// loadPass reads the entry name: the instrumented module and its Info, or
// false when there is none that matches its seal.
func (c *cacheSeals) loadPass(name string) ([]byte, instrument.Info, bool) {
	body, ok := c.loadSealed(name)
	if !ok || len(body) < 4 {
		return nil, instrument.Info{}, false
	}
	n := int(binary.LittleEndian.Uint32(body))
	var info instrument.Info
	if n > len(body)-4 || json.Unmarshal(body[4:4+n], &info) != nil {
		return nil, instrument.Info{}, false
	}
	return body[4+n:], info, true
}

// savePass writes the entry name: the Info's length and JSON, the module,
// and the seal.
func (c *cacheSeals) savePass(name string, metered []byte, info instrument.Info) error {
	j, err := json.Marshal(info)
	if err != nil {
		return err
	}
	b := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(j)+len(metered)+sha256.Size), uint32(len(j)))
	return c.saveSealed(name, append(append(b, j...), metered...))
}

// instrumented is the pass's output for wasm: from the cache when an entry
// matches, else from the pass (and then kept there); name is the entry's
// ("" without a cache).
func (s *Sandbox) instrumented(wasm []byte, opt instrument.Options) (metered []byte, info instrument.Info, name string, err error) {
	if s.seals != nil {
		name = passKey(wasm, opt)
	}
	if name != "" {
		s.seals.prunePass()
		if metered, info, ok := s.seals.loadPass(name); ok {
			return metered, info, name, nil
		}
	}
	if err := instrument.Prescan(wasm); err != nil {
		return nil, instrument.Info{}, "", err
	}
	passRuns.Add(1)
	metered, info, err = instrument.InstrumentInfo(wasm, opt)
	if err == nil && name != "" {
		_ = s.seals.savePass(name, metered, info) // a cache that cannot be written only costs the next boot
	}
	return metered, info, name, err
}
