package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// common holds the connection flags every command takes.
type common struct {
	servers        string
	sessionTimeout time.Duration
	connectTimeout time.Duration
	verbose        bool
	namespace      string
	security       security // TLS and SASL (security.go)
}

func (c *common) register(fs *flag.FlagSet) { c.registerVerbose(fs, "v") }

// registerVerbose registers the common flags, with the verbose flag named
// verbose: the node commands keep -v for a version, as zkCli.sh does.
func (c *common) registerVerbose(fs *flag.FlagSet, verbose string) {
	fs.StringVar(&c.servers, "servers", os.Getenv("ZK_SERVERS"), "ZooKeeper servers, host:port,... (default $ZK_SERVERS)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 10*time.Second, "ZooKeeper session timeout")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", 15*time.Second, "give up connecting after this long")
	fs.BoolVar(&c.verbose, verbose, false, "log connection states and retries to stderr")
	fs.StringVar(&c.namespace, "namespace", "", "root every PATH under this node, as Curator's namespace (\"app\": /x is /app/x); default none")
	c.security.register(fs)
}

// request connects for a command that makes its requests and exits: ctx
// bounds the connection and the requests (connect plus session timeout),
// and the Session stays on the servers given (no ensemble read, no move
// off an address a port-forward gave).
// On failure it returns the exit status, having said why; else done
// closes the Session and ends ctx.
func (c *common) request(name string, opts ...zkrecipes.SessionOption) (ctx context.Context, s *zkrecipes.Session, done func(), code int) {
	if c.servers == "" {
		return nil, nil, nil, usageErr(name, "no servers: use --servers or set ZK_SERVERS")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.connectTimeout+c.sessionTimeout)
	s, err := c.connect(ctx, append([]zkrecipes.SessionOption{zkrecipes.WithEnsembleTracking(false)}, opts...)...)
	if err != nil {
		cancel()
		return nil, nil, nil, zkErr(name, err)
	}
	return ctx, s, func() { _ = s.Close(); cancel() }, 0
}

// connect opens a Session with the common flags.
func (c *common) connect(ctx context.Context, opts ...zkrecipes.SessionOption) (*zkrecipes.Session, error) {
	if c.servers == "" {
		return nil, errors.New("no servers: use --servers or set ZK_SERVERS")
	}
	// The Kerberos mechanism's clean-up (sec's second result) is left to
	// the process's exit: a Session lives as long as zkr does.
	sec, _, err := c.security.options()
	if err != nil {
		return nil, err
	}
	opts = append(append([]zkrecipes.SessionOption{zkrecipes.WithSessionTimeout(c.sessionTimeout)}, sec...), opts...)
	if c.namespace != "" {
		opts = append(opts, zkrecipes.WithNamespace(c.namespace))
	}
	if c.verbose {
		opts = append(opts, zkrecipes.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	}
	cctx, cancel := context.WithTimeout(ctx, c.connectTimeout)
	defer cancel()
	return zkrecipes.Connect(cctx, strings.Split(c.servers, ","), opts...)
}

// parse parses args, which may mix flags and positional arguments, up to
// a "--"; it returns the positional arguments and what follows "--"
// (nil when there is no "--"). On -h it prints the usage and returns
// flag.ErrHelp.
func parse(fs *flag.FlagSet, args []string) (pos, rest []string, err error) {
	for i, a := range args {
		if a == "--" {
			rest = append([]string{}, args[i+1:]...)
			args = args[:i]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, rest, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// newFlagSet returns a flag set whose usage prints head and the flags.
func newFlagSet(name, head string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(os.Stdout, head)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parseOrExit runs parse and turns its failures into an exit status
// (0 after --help); ok is false when the command must exit with it.
func parseOrExit(fs *flag.FlagSet, args []string) (pos, rest []string, code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // the flag package calls it on -h too: print it once, below
	pos, rest, err := parse(fs, args)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return nil, nil, 0, false
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v (see --help)\n", fs.Name(), err)
		return nil, nil, exitUsage, false
	}
	return pos, rest, 0, true
}

func usageErr(name, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "%s: %s (see --help)\n", name, fmt.Sprintf(format, args...))
	return exitUsage
}

// zkErr reports a failure and returns its exit status: 64 for a bad path
// or argument, 130 when interrupted, 69 otherwise.
func zkErr(name string, err error) int {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	switch {
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, zkrecipes.ErrInvalidPath) || errors.Is(err, zkrecipes.ErrInvalidArgument) || errors.Is(err, errSecurityFlags):
		return exitUsage
	}
	return exitUnavailable
}
