package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/kindgi/packd/internal/sandbox"
)

// Reading a module file: inside the module root, bounded in size.

// ReadModuleFile reads the module at path p inside root as Load does: p
// relative, with forward slashes, never leaving root, at most
// sandbox.DefaultMaxModuleBytes.
func ReadModuleFile(root, p string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readModule(r, p, sandbox.DefaultMaxModuleBytes)
}

// errMissingModule: a module path names no file in the module root. Its
// text is the reference services' ("Missing module: <path>").
var errMissingModule = errors.New("Missing module")

// readSized reads f, whose size was size when it was opened, into one
// buffer of that size (io.ReadAll's doublings cost 28 ms of a 2.6 MiB
// module's warm load here, most of it clearing the buffers it threw
// away); a file that changed size while read is read whole all the same,
// up to limit.
func readSized(f io.Reader, size int64, limit int) ([]byte, error) {
	b := make([]byte, size, size+1)
	n, err := io.ReadFull(f, b)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return b[:n], nil // it shrank
	}
	if err != nil {
		return nil, err
	}
	rest, err := io.ReadAll(io.LimitReader(f, int64(limit)-size+1))
	if err == nil && size+int64(len(rest)) > int64(limit) {
		err = fmt.Errorf("grew past the module size limit of %d while read", limit)
	}
	return append(b, rest...), err
}

// readModule reads a module path inside root: relative, forward slashes,
// never leaving the root (os.Root refuses ".." and symlinks that escape),
// at most limit bytes.
func readModule(r *os.Root, p string, limit int) ([]byte, error) {
	if p == "" || path.IsAbs(p) || filepath.IsAbs(p) || strings.Contains(p, `\`) {
		return nil, fmt.Errorf("%s: a module path must be relative to the module root, with forward slashes", p)
	}
	if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
		return nil, fmt.Errorf("%s: module path escapes the module root", p)
	}
	f, err := r.Open(filepath.FromSlash(p))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", errMissingModule, p)
		}
		return nil, fmt.Errorf("%s: module path escapes the module root or cannot be opened: %v", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	if st.Size() > int64(limit) {
		return nil, fmt.Errorf("%s: %d bytes is over the module size limit of %d", p, st.Size(), limit)
	}
	b, err := readSized(f, st.Size(), limit)
	if err != nil {
		return nil, fmt.Errorf("%s: reading module: %v", p, err)
	}
	return b, nil
}
