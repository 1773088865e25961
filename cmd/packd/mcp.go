package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/mcp"
	"github.com/kindgi/packd/internal/server"
	"github.com/kindgi/packd/internal/service"
)

// The MCP face: --mcp on serve (and check), and packd mcp, the same face
// over stdio.

const (
	mcpOn     = "on"
	mcpOff    = "off"
	mcpNoAuth = "no-auth"
)

// registerMCP adds --mcp to fs; serving says whether no-auth is one of
// its values (a command that serves over HTTP).
func registerMCP(fs *flag.FlagSet, v *string, getenv func(string) string, serving bool) {
	usage := `the MCP face: "on" serves the pack's tools over MCP on /mcp (the token as Authorization: Bearer), "off" does not; either way a tool MCP cannot serve is a load problem unless "off" (default $PACKD_MCP, else on)`
	if serving {
		usage = `the MCP face: "on" serves the pack's tools over MCP on /mcp, with the token as Authorization: Bearer or kindgi-pack-token; "no-auth" without a token, on a loopback --host only (a desktop's own server); "off" not at all. Unless off, a tool MCP cannot serve is a load problem (default $PACKD_MCP, else on)`
	}
	fs.StringVar(v, "mcp", envOr(getenv, "PACKD_MCP", mcpOn), usage)
}

// checkMCP lists the problems with --mcp: its value, and no-auth on a
// listener that is not loopback's.
func checkMCP(v, listenHost string, stdio bool) []string {
	switch v {
	case mcpOn, mcpOff:
	case mcpNoAuth:
		if !stdio && !loopbackListener(listenHost) {
			return []string{fmt.Sprintf(`--mcp no-auth serves without a token: only on a loopback --host (127.0.0.1, ::1 or localhost), not %q`, listenHost)}
		}
	default:
		return []string{fmt.Sprintf(`--mcp (or PACKD_MCP) must be "on", "off" or "no-auth", got %q`, v)}
	}
	return nil
}

func loopbackListener(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && ip.IsLoopback()
}

// mcpRoute sets the MCP face's rules on the load config and makes the
// face's route once the service has started; nil when --mcp is off.
func mcpRoute(hc *host.Config, cfg serviceConfig) func(*service.Service) ([]server.Route, error) {
	if cfg.mcp == mcpOff {
		return nil
	}
	hc.IndexRules = mcp.IndexProblems
	return func(svc *service.Service) ([]server.Route, error) {
		mc := mcp.Config{Service: svc, Version: versionString()}
		if cfg.mcp == mcpNoAuth {
			mc.NoAuth = true
		} else {
			mc.Token = cfg.token
		}
		f, err := mcp.New(mc)
		if err != nil {
			return nil, err
		}
		return []server.Route{{Path: "/mcp", Handler: f.Handler(), Close: f.Close}}, nil
	}
}

// mcpCmd serves the pack's tools to one MCP client over stdin and stdout
// (a desktop client starts it): the service as packd serve has it, but
// for its listener; its lines, and pack code's output, on stderr, since
// stdout is the client's.
func mcpCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	rec, closeLog := batchedLog(stderr)
	defer closeLog()
	cfg, problems := readServiceConfig(args, os.Getenv, true)
	if cfg.help {
		fmt.Fprint(stderr, "usage: packd mcp [--index I] [--module-root R] [serve's flags for the pack and its calls]\n\n"+
			"Serves the pack's tools to one MCP client over stdin and stdout (MCP's stdio transport); lines on stderr.\n\nflags:\n")
		var c serviceConfig
		fs := serveFlags(&c, os.Getenv)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		return exitOK
	}
	if cfg.mcp == mcpOff {
		problems = append(problems, "packd mcp is the MCP face: --mcp off leaves it nothing to serve")
	}
	// Pack code's output never reaches stdout: it is the client's.
	sc, ok := cfg.prepare(problems, rec, stderr)
	if !ok {
		return exitError
	}
	sc.Load.IndexRules = mcp.IndexProblems
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	svc, err := service.Start(ctx, sc)
	if err != nil {
		return exitError // said in its boot-failed line
	}
	defer svc.Close(context.Background())
	f, err := mcp.New(mcp.Config{Service: svc, NoAuth: true, Version: versionString()})
	if err != nil {
		rec.Lifecycle("boot-failed", "error", "The MCP face could not start: "+err.Error())
		return exitError
	}
	defer f.Close(context.Background())
	p := svc.Pack().Index()
	rec.Lifecycle("listening", "info", "Serving MCP over stdio", service.Field{Key: "transport", Value: "stdio"},
		service.Field{Key: "packId", Value: p.PackID}, service.Field{Key: "artifactVersion", Value: p.ArtifactVersion})
	err = f.ServeStdio(ctx, io.NopCloser(stdin), nopWriteCloser{stdout})
	_ = svc.Drain(context.Background())
	if err != nil && !errors.Is(err, context.Canceled) {
		rec.Lifecycle("stopped", "error", "The MCP session ended: "+err.Error())
		return exitError
	}
	rec.Lifecycle("stopped", "info", "Stopped")
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
