//go:build race

package ojson

// raceBuild: the race detector drops a quarter of what sync.Pool is given,
// so a pooled decoder is made anew (and its stacks grown) that often.
const raceBuild = true
