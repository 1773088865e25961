//go:build race

package sandbox

// raceBuild: the race detector's runtime takes page faults of its own
// (shadow memory), also while a reset reads /proc/self/pagemap, so a
// reset rarely finds the process's fault count unchanged since its last
// scan and scans again: correct, only slower.
const raceBuild = true
