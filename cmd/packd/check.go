package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/mcp"
	"github.com/kindgi/packd/internal/oci"
)

// checkCmd loads and compiles everything an index names and lists every
// problem, one per line; exit 0 when there is none.
func checkCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("packd check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf loadFlags
	lf.register(fs, os.Getenv)
	var mcpFace string
	registerMCP(fs, &mcpFace, os.Getenv, false)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if problems := checkMCP(mcpFace, "", true); len(problems) > 0 || mcpFace == mcpNoAuth {
		fmt.Fprintln(stderr, `packd check: --mcp (or PACKD_MCP) must be "on" or "off"`)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "packd check: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	stderr = &syncWriter{w: stderr}  // guest lines arrive from a queue's goroutine
	lf.onPull = func(p oci.Pulled) { // where replay --index finds it
		fmt.Fprintf(stdout, "%s; its index: %s\n", pulledSaying(lf.index, p), p.IndexPath)
	}
	hc, err := lf.config(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "packd check:", err)
		return exitUsage
	}
	if lf.cacheWarning != "" {
		fmt.Fprintln(stderr, "packd check: warning:", lf.cacheWarning)
	}
	if mcpFace != mcpOff {
		hc.IndexRules = mcp.IndexProblems
	}
	pack, err := host.Load(context.Background(), hc)
	if pack != nil {
		defer pack.Close(context.Background())
	}
	var le *host.LoadError
	switch {
	case errors.As(err, &le):
		for _, p := range le.Problems {
			fmt.Fprintln(stdout, p)
		}
		if le.ModuleRoot != "" {
			fmt.Fprintf(stderr, "packd check: module paths resolve in %s (the index's directory unless --module-root says otherwise)\n", le.ModuleRoot)
		}
		fmt.Fprintf(stderr, "packd check: %d problem(s) (the index format: docs/index-format.md)\n", len(le.Problems))
		return exitError
	case err != nil:
		fmt.Fprintln(stderr, "packd check:", err)
		return exitError
	}
	fmt.Fprintf(stdout, "ok: pack %s %s, %d tool(s), %d check(s)\n",
		pack.Index().PackID, pack.Index().PackVersion, len(pack.Index().Tools), len(pack.Index().Guardrails))
	return exitOK
}
