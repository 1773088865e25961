//go:build linux

package immutable

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// Freeze makes every file and directory under dir immutable (chattr +i:
// not even root may write, create or remove there), as a read-only mount
// of an image's cache is, until the test ends.
func Freeze(t *testing.T, dir string) {
	t.Helper()
	const getFlags, setFlags, immutable = 0x80086601, 0x40086602, 0x10
	set := func(path string, on bool) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var flags uint32
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), getFlags, uintptr(unsafe.Pointer(&flags))); e != 0 {
			return e
		}
		if on {
			flags |= immutable
		} else {
			flags &^= immutable
		}
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), setFlags, uintptr(unsafe.Pointer(&flags))); e != 0 {
			return e
		}
		return nil
	}
	var paths []string
	_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	t.Cleanup(func() {
		for _, p := range paths {
			_ = set(p, false)
		}
	})
	for _, p := range paths {
		if err := set(p, true); err != nil {
			t.Fatalf("chattr +i %s: %v (this test needs a file system with the immutable flag, and CAP_LINUX_IMMUTABLE)", p, err)
		}
	}
	if f, err := os.CreateTemp(dir, "probe"); err == nil {
		f.Close()
		t.Fatalf("%s is writable after freezing it", dir)
	}
}
