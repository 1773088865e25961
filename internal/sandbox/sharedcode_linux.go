package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

// Compiled code mapped from a file. wazero maps a module's native code
// anonymous and copies all of it in (from its cache, or from the
// compiler), so every page of it is resident for as long as the module is
// loaded: 15 MiB a Go module, of which a Go echo's calls run under 2 MiB.
// Once a module is warm (Module.Warm), its code is mapped from a file
// instead, as a shared library's text is: a page is resident once it runs,
// and a clean page the kernel needs can be dropped and read again. The
// load-time code (_initialize, kindgi_describe) ran before, so what it
// touched is not kept.
//
// The file is the module's pass entry's name with ".code" (passcache.go),
// one per module and executable. Before it is mapped it is read whole and
// compared with the code; one that differs (or is missing) is written
// anew beside it and renamed over it, so no file is ever written in place,
// under a mapping: what runs is what wazero compiled. Where it cannot be
// (no cache directory, one on tmpfs, where the pages would stay in memory
// all the same and only the accounting would change, a noexec mount,
// wazero laid out otherwise than this build knows) the code stays as
// wazero mapped it.

// shareCode maps the code of m from its file, if it can; once.
func (m *Module) shareCode() error {
	if m.passName == "" {
		return nil
	}
	var err error
	m.codeShared.Do(func() {
		var code []byte
		if code, err = codeOf(m.compiled); err == nil {
			err = mapCodeFrom(code, m.sb.seals.passPath(m.passName)+".code", !m.sb.seals.readOnly)
		}
	})
	return err
}

// onMemoryFS reports whether dir is on a file system held in memory.
func onMemoryFS(dir string) bool {
	var st syscall.Statfs_t
	const tmpfs, ramfs = 0x01021994, 0x858458f6
	return syscall.Statfs(dir, &st) == nil && (st.Type == tmpfs || st.Type == ramfs)
}

// mapCodeFrom maps the file at path, made to hold exactly code (when
// write allows), over code.
func mapCodeFrom(code []byte, path string, write bool) error {
	dir := filepath.Dir(path)
	if onMemoryFS(dir) {
		return fmt.Errorf("%s is held in memory", dir)
	}
	f, err := codeFile(code, path, write)
	if err != nil {
		return err
	}
	defer f.Close()
	size := uintptr(len(code)+pageSize-1) &^ (pageSize - 1)
	// Mapped elsewhere first: a mount that refuses to map it executable
	// refuses here, with the code still in place. The move then replaces
	// the code's pages with the file's in one step.
	p, _, errno := syscall.Syscall6(syscall.SYS_MMAP, 0, size, syscall.PROT_READ|syscall.PROT_EXEC, syscall.MAP_PRIVATE, f.Fd(), 0)
	if errno != 0 {
		return fmt.Errorf("mapping %s: %w", path, errno)
	}
	const mayMove, fixed = 1, 2
	if _, _, errno := syscall.Syscall6(syscall.SYS_MREMAP, p, size, size, mayMove|fixed, uintptr(unsafe.Pointer(unsafe.SliceData(code))), 0); errno != 0 {
		_, _, _ = syscall.Syscall(syscall.SYS_MUNMAP, p, size, 0)
		return fmt.Errorf("moving %s over the code: %w", path, errno)
	}
	return nil
}

// codeFile is the file at path open for reading, holding exactly code:
// the one there if it does, else (when write allows) one written beside
// it and renamed over it.
func codeFile(code []byte, path string, write bool) (*os.File, error) {
	if f, st, err := openRegular(path); err == nil {
		if holds(f, st.Size(), code) {
			return f, nil
		}
		_ = f.Close()
	}
	if !write {
		return nil, fmt.Errorf("%s does not hold the module's code, and the cache is read-only", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, err
	}
	if _, err := tmp.Write(code); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	return tmp, nil // the inode written, whatever is renamed over path later
}

// holds reports whether f's bytes (size of them) are exactly code.
func holds(f *os.File, size int64, code []byte) bool {
	if size != int64(len(code)) {
		return false
	}
	buf := make([]byte, 256<<10)
	for off := 0; off < len(code); {
		n, err := f.ReadAt(buf[:min(len(buf), len(code)-off)], int64(off))
		if n == 0 || !bytes.Equal(buf[:n], code[off:off+n]) {
			return false
		}
		off += n
		if err != nil && err != io.EOF {
			return false
		}
	}
	return true
}
