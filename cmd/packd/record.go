package main

import (
	"flag"
	"fmt"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/sandbox"
)

// recordFlags are the flags of the commands that record calls (serve,
// invoke): where records go and which calls are recorded.
type recordFlags struct {
	dir      string
	targets  string
	callKiB  int64
	totalMiB int64 // serve only
}

// register adds the flags to fs; total says whether the directory's bound
// is one of them.
func (r *recordFlags) register(fs *flag.FlagSet, getenv func(string) string, total bool) {
	how := "one file each" // packd invoke's
	if total {
		how = "appended to segment files" // packd serve's (service.ReplayRecords)
	}
	fs.StringVar(&r.dir, "record", getenv("PACKD_RECORD_DIR"), "record calls into this directory, "+how+", for packd replay (default $PACKD_RECORD_DIR; off when empty)")
	fs.StringVar(&r.targets, "record-targets", "all", `which calls --record records: "all" (but targets whose limits.record is false) or "marked" (targets whose limits.record is true)`)
	fs.Int64Var(&r.callKiB, "record-call-kib", host.DefaultRecordCallBytes>>10, fmt.Sprintf("largest record of one call, KiB (its host answers, input and output; at most %d): a larger call is not recorded", sandbox.MaxTapeBytes>>10))
	if total {
		fs.Int64Var(&r.totalMiB, "record-max-mib", 1024, "most the record directory may hold, MiB: past it, calls are not recorded")
	}
}

// check lists what is wrong with the flags.
func (r *recordFlags) check() []string {
	var problems []string
	if r.targets != "all" && r.targets != "marked" {
		problems = append(problems, fmt.Sprintf(`--record-targets must be "all" or "marked", got %q`, r.targets))
	}
	if r.callKiB < 1 || r.callKiB > sandbox.MaxTapeBytes>>10 {
		problems = append(problems, fmt.Sprintf("--record-call-kib must be from 1 to %d", sandbox.MaxTapeBytes>>10))
	}
	if r.totalMiB < 0 {
		problems = append(problems, "--record-max-mib must not be negative")
	}
	return problems
}

// config is which calls a pack records: nil when none.
func (r *recordFlags) config() *host.RecordConfig {
	if r.dir == "" {
		return nil
	}
	return &host.RecordConfig{Marked: r.targets == "marked", MaxCallBytes: int(r.callKiB << 10)}
}
