package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes"
)

// The node commands: ls, get, set, stat, create and rm, what zkCli.sh
// offers, on the Session's node API (Session.Create, Get, Set, Exists,
// Children, Delete), so that they take the namespace, TLS and SASL flags
// and the Session's retries like every other command.

// nodeExits is the part of every node command's help that tells its exit
// status.
const nodeExits = `
Exit status: 0 done; 66 no such node (or, for create, no parent: use -p);
65 the node is not as required (create: it exists; -v: another version;
rm: it has children, use -r); 64 usage error or bad path; 69 ZooKeeper
unavailable or another ZooKeeper error; 130 interrupted.
`

const lsHelp = `usage: zkr ls PATH [-R] [flags]

Lists the children of PATH, one name a line, sorted. With -R, the whole
tree under PATH: PATH and every node below it, one full path a line,
depth first, sorted (a node deleted while the tree is read is left out).
PATH "/" is the root (of the namespace, with --namespace).
` + nodeExits + `
flags:
`

const getHelp = `usage: zkr get PATH [-s] [flags]

Writes the data of the node at PATH to stdout as it is: no newline added,
no quoting, so that it pipes (zkr get /cfg > cfg.json). With -s, the
node's stat follows on stderr (in zkr stat's format), stdout keeping the
data alone.
` + nodeExits + `
flags:
`

const statHelp = `usage: zkr stat PATH [flags]

Prints the stat of the node at PATH, one field a line, as zkCli.sh names
them:

  cZxid = 0x1a              the create's zxid
  ctime = 2026-11-29T00:35:23.512Z
  mZxid = 0x1c              the last data change's zxid
  mtime = 2026-11-29T00:36:01.007Z
  pZxid = 0x1a              the last change of the children's zxid
  cversion = 0              changes of the children
  dataVersion = 2           changes of the data: what set -v and rm -v compare
  aclVersion = 0
  ephemeralOwner = 0x0      the owning session of an ephemeral node
  dataLength = 11
  numChildren = 0
` + nodeExits + `
flags:
`

const setHelp = `usage: zkr set PATH DATA|- [-v VERSION] [-s] [flags]

Writes DATA to the node at PATH; "-" reads the data from stdin (to its
end, as it is). Data that starts with "-" goes after "--":
zkr set /n -- -1. With -v, writes only while the node's data version is
VERSION (from zkr stat): a compare-and-set, exit 65 when another write
came first. Prints nothing, or with -s the node's new stat.
` + nodeExits + `
flags:
`

const createHelp = `usage: zkr create PATH [DATA|-] [-p] [-s] [-c | --ttl D] [flags]

Creates the node at PATH holding DATA (none: empty; "-": read from stdin;
data that starts with "-" goes after "--") and prints its path: for -s,
the name the server gave it. The node is persistent unless:

  -s        sequential: the server appends a 10-digit counter to PATH
  -c        a container: the server deletes it once its last child is gone
  --ttl D   a TTL node: the server deletes it once it has had no change and
            no child for D (with -s: sequential too). The servers must run
            with zookeeper.extendedTypesEnabled=true.

No ephemeral mode: zkr's session ends as zkr exits, and an ephemeral node
with it, so -e is refused. To hold an ephemeral node while a command
runs, use zkr lock, zkr elect or zkr register.

With -p, missing parents are created first, as containers (as Curator's
creatingParentContainersIfNeeded).
` + nodeExits + `
flags:
`

const rmHelp = `usage: zkr rm PATH [-r] [-v VERSION] [flags]

Deletes the node at PATH. With -r, its children and theirs first (a child
created meanwhile is deleted too). With -v, only while PATH's data
version is VERSION (from zkr stat): checked before anything is deleted,
so rm -r -v on a node that moved deletes nothing. A lost connection is
waited out and the delete sent again; a node found gone after that was
deleted.
` + nodeExits + `
flags:
`

// Exit statuses of the node commands, besides exitUsage, exitUnavailable
// and exitInterrupted.
const (
	exitConflict = 65 // the node exists, has another version, has children
	exitNoNode   = 66 // no such node
)

// nodeCmd is what the node commands share: their flags and arguments,
// parsed.
type nodeCmd struct {
	fs   *flag.FlagSet
	c    common
	pos  []string
	rest []string // what follows "--" (nil when there is none)
}

// newNodeCmd returns a node command's flag set, with the common flags
// (-v is left to a version, --verbose logs).
func newNodeCmd(name, help string) *nodeCmd {
	n := &nodeCmd{fs: newFlagSet("zkr "+name, help)}
	n.c.registerVerbose(n.fs, "verbose")
	return n
}

// parse parses args; ok is false when the command must exit with code.
// It refuses a "--" unless dashData.
func (n *nodeCmd) parse(args []string, dashData bool) (code int, ok bool) {
	n.pos, n.rest, code, ok = parseOrExit(n.fs, args)
	if !ok {
		return code, false
	}
	if n.rest != nil && !dashData {
		return n.usage("unexpected \"--\""), false
	}
	if n.c.servers == "" {
		return n.usage("no servers: use --servers or set ZK_SERVERS"), false
	}
	return 0, true
}

func (n *nodeCmd) usage(format string, args ...any) int {
	return usageErr(n.fs.Name(), format, args...)
}

// run connects and runs fn, interruptible by SIGINT, SIGTERM and SIGHUP,
// and returns the exit status of its error.
func (n *nodeCmd) run(fn func(ctx context.Context, s *zkrecipes.Session) error) int {
	w, err := n.c.startWaiting(zkrecipes.LoseOnLost)
	defer w.close()
	if err != nil {
		return zkErr(n.fs.Name(), err)
	}
	_, err = interruptible(w.ctx, w.cancel, w.sigs, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx, w.s)
	})
	return n.fail(err)
}

// fail reports err and returns its exit status (0 for nil): 66 for no
// node, 65 for a node not as required (see nodeExits), else zkErr's.
func (n *nodeCmd) fail(err error) int {
	name := n.fs.Name()
	switch {
	case err == nil:
		return 0
	case errors.Is(err, zkrecipes.ErrNoNode):
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitNoNode
	case errors.Is(err, zkrecipes.ErrNodeExists), errors.Is(err, zkrecipes.ErrBadVersion),
		errors.Is(err, zkrecipes.ErrNotEmpty), errors.Is(err, zkrecipes.ErrNoChildrenForEphemerals):
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitConflict
	case errors.Is(err, zkrecipes.ErrDataTooLarge):
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	return zkErr(name, err)
}

// hint adds a word on what to do to the error of a node command.
func hint(err error, kind error, what string) error {
	if errors.Is(err, kind) {
		return fmt.Errorf("%w (%s)", err, what)
	}
	return err
}

// data returns the data argument: DATA after PATH or after "--", or stdin
// for "-"; none is nil (empty data), unless required.
func (n *nodeCmd) data(required bool) ([]byte, int, bool) {
	args := n.pos[1:]
	if n.rest != nil {
		args = append(args, n.rest...)
	}
	switch {
	case len(args) > 1:
		return nil, n.usage("want one DATA argument, got %d (quote it)", len(args)), false
	case len(args) == 0 && required:
		return nil, n.usage("want DATA, or - to read it from stdin"), false
	case len(args) == 0:
		return nil, 0, true
	case args[0] == "-" && n.rest == nil:
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: read stdin: %v\n", n.fs.Name(), err)
			return nil, exitUnavailable, false
		}
		return b, 0, true
	}
	return []byte(args[0]), 0, true
}

// versionFlag registers -v VERSION: -1 (the default) is any version.
func (n *nodeCmd) versionFlag(what string) *int64 {
	return n.fs.Int64("v", -1, what+" only while the node's data version is this (from zkr stat); -1: any version")
}

// checkVersion checks that -v fits ZooKeeper's 32-bit version (a
// version wraps negative after 2^31-1 changes, so negative ones are
// valid).
func (n *nodeCmd) checkVersion(v int64) (int, bool) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return n.usage("-v %d is not a ZooKeeper version (32 bits)", v), false
	}
	return 0, true
}

func cmdLs(args []string) int {
	n := newNodeCmd("ls", lsHelp)
	recursive := n.fs.Bool("R", false, "list the whole tree under PATH, full paths")
	if code, ok := n.parse(args, false); !ok {
		return code
	}
	if len(n.pos) != 1 {
		return n.usage("want exactly one PATH")
	}
	path := n.pos[0]
	return n.run(func(ctx context.Context, s *zkrecipes.Session) error {
		if *recursive {
			return lsTree(ctx, s, path, true)
		}
		kids, _, err := s.Children(ctx, path)
		if err != nil {
			return err
		}
		sort.Strings(kids)
		for _, k := range kids {
			fmt.Fprintln(os.Stdout, k)
		}
		return nil
	})
}

// lsTree prints path and every node below it, depth first; a node below
// the top that is gone by the time it is listed is left out.
func lsTree(ctx context.Context, s *zkrecipes.Session, path string, top bool) error {
	kids, _, err := s.Children(ctx, path)
	if errors.Is(err, zkrecipes.ErrNoNode) && !top {
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, path)
	sort.Strings(kids)
	for _, k := range kids {
		child := strings.TrimSuffix(path, "/") + "/" + k
		if err := lsTree(ctx, s, child, false); err != nil {
			return err
		}
	}
	return nil
}

func cmdGet(args []string) int {
	n := newNodeCmd("get", getHelp)
	withStat := n.fs.Bool("s", false, "print the node's stat on stderr after the data")
	if code, ok := n.parse(args, false); !ok {
		return code
	}
	if len(n.pos) != 1 {
		return n.usage("want exactly one PATH")
	}
	return n.run(func(ctx context.Context, s *zkrecipes.Session) error {
		data, st, err := s.Get(ctx, n.pos[0])
		if err != nil {
			return err
		}
		if _, err := os.Stdout.Write(data); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		if *withStat {
			printStat(os.Stderr, st)
		}
		return nil
	})
}

func cmdStat(args []string) int {
	n := newNodeCmd("stat", statHelp)
	if code, ok := n.parse(args, false); !ok {
		return code
	}
	if len(n.pos) != 1 {
		return n.usage("want exactly one PATH")
	}
	return n.run(func(ctx context.Context, s *zkrecipes.Session) error {
		st, err := s.Exists(ctx, n.pos[0])
		switch {
		case err != nil:
			return err
		case st == nil:
			return fmt.Errorf("stat %s: %w", n.pos[0], zkrecipes.ErrNoNode)
		}
		printStat(os.Stdout, st)
		return nil
	})
}

// printStat prints st in zkCli.sh's names (see statHelp).
func printStat(w io.Writer, st *zkrecipes.NodeStat) {
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	fmt.Fprintf(w, "cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\n"+
		"cversion = %d\ndataVersion = %d\naclVersion = %d\nephemeralOwner = 0x%x\ndataLength = %d\nnumChildren = %d\n",
		st.Czxid, ts(st.Created), st.Mzxid, ts(st.Modified), st.Pzxid,
		st.Cversion, st.Version, st.Aversion, st.EphemeralOwner, st.DataLength, st.NumChildren)
}

func cmdSet(args []string) int {
	n := newNodeCmd("set", setHelp)
	version := n.versionFlag("write")
	withStat := n.fs.Bool("s", false, "print the node's new stat")
	if code, ok := n.parse(args, true); !ok {
		return code
	}
	if len(n.pos) < 1 {
		return n.usage("want PATH and DATA (or - for stdin)")
	}
	if code, ok := n.checkVersion(*version); !ok {
		return code
	}
	data, code, ok := n.data(true)
	if !ok {
		return code
	}
	return n.run(func(ctx context.Context, s *zkrecipes.Session) error {
		st, err := s.Set(ctx, n.pos[0], data, zkrecipes.WithVersion(int32(*version)))
		if err != nil {
			return hint(err, zkrecipes.ErrBadVersion, fmt.Sprintf("-v %d; read it again with zkr stat", *version))
		}
		if *withStat {
			printStat(os.Stdout, st)
		}
		return nil
	})
}

func cmdCreate(args []string) int {
	n := newNodeCmd("create", createHelp)
	parents := n.fs.Bool("p", false, "create missing parents, as containers")
	seq := n.fs.Bool("s", false, "sequential: the server appends a counter to the name")
	container := n.fs.Bool("c", false, "a container node, deleted by the server once its last child is gone")
	ttl := n.fs.Duration("ttl", 0, "a TTL node, deleted by the server after this long without change or child (0: none)")
	ephemeral := n.fs.Bool("e", false, "refused: an ephemeral node would go as zkr exits (see above)")
	if code, ok := n.parse(args, true); !ok {
		return code
	}
	switch {
	case len(n.pos) < 1:
		return n.usage("want PATH [DATA|-]")
	case *ephemeral:
		return n.usage("no ephemeral nodes: zkr's session, and the node, would end as zkr exits; use zkr lock, elect or register to hold one while a command runs")
	case *container && (*seq || *ttl != 0):
		return n.usage("-c does not go with -s or --ttl")
	case *ttl < 0:
		return n.usage("--ttl must not be negative")
	}
	data, code, ok := n.data(false)
	if !ok {
		return code
	}
	mode := zkrecipes.ModePersistent
	switch {
	case *container:
		mode = zkrecipes.ModeContainer
	case *ttl > 0 && *seq:
		mode = zkrecipes.ModePersistentSequentialWithTTL
	case *ttl > 0:
		mode = zkrecipes.ModePersistentWithTTL
	case *seq:
		mode = zkrecipes.ModePersistentSequential
	}
	opts := []zkrecipes.NodeOption{zkrecipes.WithMode(mode)}
	if *ttl > 0 {
		opts = append(opts, zkrecipes.WithTTL(*ttl))
	}
	if *parents {
		opts = append(opts, zkrecipes.WithParents(true))
	}
	return n.run(func(ctx context.Context, s *zkrecipes.Session) error {
		p, err := s.Create(ctx, n.pos[0], data, opts...)
		if err != nil {
			return hint(err, zkrecipes.ErrNoNode, "no parent node; -p creates it")
		}
		fmt.Fprintln(os.Stdout, p)
		return nil
	})
}

func cmdRm(args []string) int {
	n := newNodeCmd("rm", rmHelp)
	recursive := n.fs.Bool("r", false, "delete the node's descendants too")
	version := n.versionFlag("delete")
	if code, ok := n.parse(args, false); !ok {
		return code
	}
	if len(n.pos) != 1 {
		return n.usage("want exactly one PATH")
	}
	if code, ok := n.checkVersion(*version); !ok {
		return code
	}
	opts := []zkrecipes.NodeOption{zkrecipes.WithVersion(int32(*version))}
	if *recursive {
		opts = append(opts, zkrecipes.WithDeleteChildren(true))
	}
	return n.run(func(ctx context.Context, s *zkrecipes.Session) error {
		err := s.Delete(ctx, n.pos[0], opts...)
		err = hint(err, zkrecipes.ErrNotEmpty, "-r deletes them too")
		return hint(err, zkrecipes.ErrBadVersion, fmt.Sprintf("-v %d; read it again with zkr stat", *version))
	})
}
