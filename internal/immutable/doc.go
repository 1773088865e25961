// Package immutable makes a directory tree read-only for the tests, even
// to root, as a read-only mount of a container image is: chattr +i on every
// file and directory (FS_IOC_SETFLAGS, Linux), undone when the test ends.
package immutable
