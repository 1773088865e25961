// Package scripts holds the repository's shell scripts (deps: what make
// test installs first); its tests hold them to what they promise.
package scripts
