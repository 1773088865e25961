package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/oci"
)

// ociFlags say how a pack is pulled from (or pushed to) a registry.
type ociFlags struct {
	plainHTTP bool
	cache     string
	maxMiB    int64
	timeout   time.Duration
}

// register adds the flags of a command that pulls, or (pull false) of
// packd push.
func (o *ociFlags) register(fs *flag.FlagSet, getenv func(string) string, pull bool) {
	fs.BoolVar(&o.plainHTTP, "oci-plain-http", envBool(getenv, "PACKD_OCI_PLAIN_HTTP"), "speak HTTP, not HTTPS, to the registry (a loopback test registry; default $PACKD_OCI_PLAIN_HTTP)")
	fs.DurationVar(&o.timeout, "oci-timeout", envDuration(getenv, "PACKD_OCI_TIMEOUT", oci.DefaultTimeout), "longest a pull from (or push to) a registry may take (default $PACKD_OCI_TIMEOUT)")
	o.maxMiB = oci.DefaultMaxBytes >> 20
	if pull {
		fs.StringVar(&o.cache, "oci-cache", defaultOCICache(getenv), "where packs pulled from a registry (--index oci://…) are kept, by digest (default $PACKD_OCI_CACHE, else the user's cache directory)")
		fs.Int64Var(&o.maxMiB, "oci-max-mib", envInt(getenv, "PACKD_OCI_MAX_MIB", o.maxMiB), "most a pull from a registry may bring, MiB (default $PACKD_OCI_MAX_MIB)")
	}
}

func defaultOCICache(getenv func(string) string) string {
	if d := getenv("PACKD_OCI_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "packd", "oci")
}

// bounds says what is wrong with the flags' bounds (push's and pull's).
func (o *ociFlags) bounds() []string {
	var problems []string
	if o.maxMiB < 1 || o.maxMiB > 64<<10 {
		problems = append(problems, "--oci-max-mib (or PACKD_OCI_MAX_MIB) must be between 1 and 65536")
	}
	if o.timeout <= 0 {
		problems = append(problems, "--oci-timeout (or PACKD_OCI_TIMEOUT) must be a positive duration")
	}
	return problems
}

// check says what is wrong with the flags of a command loading l's index.
func (o *ociFlags) check(l *loadFlags) []string {
	problems := o.bounds()
	if oci.IsRef(l.index) {
		if l.moduleRoot != "" {
			problems = append(problems, "--module-root cannot be used with an oci:// index: its modules come with it")
		}
		if _, err := oci.ParseRef(l.index, o.plainHTTP); err != nil {
			problems = append(problems, "--index "+err.Error())
		}
		if o.cache == "" {
			problems = append(problems, "an oci:// index needs --oci-cache (or PACKD_OCI_CACHE): there is no user cache directory")
		}
	}
	return problems
}

func (o *ociFlags) options(maxModuleMiB uint) oci.Options {
	return oci.Options{PlainHTTP: o.plainHTTP, MaxBytes: o.maxMiB << 20, MaxModuleBytes: int64(maxModuleMiB) << 20, Timeout: o.timeout}
}

// source is the host.Config.Source of an oci:// index: a pull before every
// load (nil for an index on disk).
func (l *loadFlags) source() (func(context.Context) (host.Location, error), error) {
	if !oci.IsRef(l.index) {
		return nil, nil
	}
	p, err := oci.NewPuller(l.index, l.oci.cache, l.oci.options(l.maxModuleMiB))
	if err != nil {
		return nil, err
	}
	l.puller = p
	onPull := l.onPull
	return func(ctx context.Context) (host.Location, error) {
		pulled, err := p.Pull(ctx)
		if err != nil {
			return host.Location{}, err
		}
		if onPull != nil {
			onPull(pulled)
		}
		return pulled.Location, nil
	}, nil
}

// onDisk refuses an oci:// index where a command reads or writes the
// index's file itself (index, sign, replay): a pack in a registry changes
// only by a push, and packd check pulls it and says where its files are.
func onDisk(cmd, index string) error {
	if !oci.IsRef(index) {
		return nil
	}
	return fmt.Errorf("%s is a pack in a registry, and packd %s works on an index on disk: packd check --index %s pulls it and says where its index is", index, cmd, index)
}

// pulledSaying is what the pack-pulled record says of a pull.
func pulledSaying(ref string, p oci.Pulled) string {
	if p.Cached {
		return fmt.Sprintf("%s is %s, which the cache holds", ref, p.Digest)
	}
	return fmt.Sprintf("Pulled %s: %s, %d bytes", ref, p.Digest, p.Bytes)
}

// pushCmd publishes a pack (its index, the modules it names, its
// signature) as one artifact in a registry.
func pushCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("packd push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	index := fs.String("index", "index.json", "the pack's index (it must name its modules' digests: packd index --digests)")
	root := fs.String("module-root", "", "where module paths resolve (default: the index's directory)")
	sig := fs.String("signature", "", "the index's signature (default: the index's path and .sig, pushed when it is there)")
	var o ociFlags
	o.register(fs, os.Getenv, false)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd push [--index index.json] [--signature index.json.sig] oci://registry/repository:tag")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "packd push: "+format+"\n", a...)
		return exitError
	}
	switch {
	case fs.NArg() != 1:
		fs.Usage()
		return exitUsage
	case !oci.IsRef(fs.Arg(0)):
		fail("%q is not a registry reference: name where the pack goes as oci://registry/repository:tag", fs.Arg(0))
		return exitUsage
	case len(o.bounds()) > 0:
		fail("%s", o.bounds()[0])
		return exitUsage
	}
	pack, err := readPack(*index, *root, *sig)
	if err != nil {
		return fail("%v", err)
	}
	ref := fs.Arg(0)
	digest, err := oci.Push(context.Background(), ref, pack, o.options(1<<10))
	if err != nil {
		return fail("%v", err)
	}
	at, err := oci.DigestRef(ref, digest, o.plainHTTP)
	if err != nil {
		return fail("%v", err)
	}
	if pack.Signature == nil {
		fmt.Fprintln(stderr, "packd push: the pack is not signed: a packd with --trust will not load it (packd sign)")
	}
	fmt.Fprintf(stdout, "pushed %s\n%s\n", ref, at)
	return exitOK
}

// readPack reads what a push publishes: the index, the modules it names
// (within root, the index's directory by default) and its signature,
// which must be there when it is named.
func readPack(index, root, sig string) (oci.Pack, error) {
	data, err := os.ReadFile(index)
	if err != nil {
		return oci.Pack{}, err
	}
	idx, problems := host.ValidateIndex(data)
	if len(problems) > 0 {
		return oci.Pack{}, fmt.Errorf("%s is not a valid index: %s", index, problems[0])
	}
	if root == "" {
		root = filepath.Dir(index)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return oci.Pack{}, err
	}
	defer r.Close()
	pack := oci.Pack{Index: data, Modules: map[string][]byte{}}
	for _, path := range idx.ModulePaths() {
		if pack.Modules[path], err = r.ReadFile(filepath.FromSlash(path)); err != nil {
			return oci.Pack{}, fmt.Errorf("module %s: %w", path, err)
		}
	}
	named := sig != ""
	if !named {
		sig = index + ".sig"
	}
	pack.Signature, err = os.ReadFile(sig)
	if errors.Is(err, os.ErrNotExist) && !named {
		err = nil
	}
	return pack, err
}
