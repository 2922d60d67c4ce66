// Command zkr runs commands under ZooKeeper locks and leader elections,
// wire-compatible with Apache Curator, and shows who holds what.
//
//	zkr lock PATH [flags] -- CMD [ARGS...]     run CMD while holding the lock on PATH
//	zkr lock -n N PATH [flags] -- CMD ...      the same with a semaphore of N permits
//	zkr elect PATH [flags] [-- CMD ...]        campaign; lead until Ctrl-C (or run CMD while leading)
//	zkr elect PATH --listen                    print every change of leader
//	zkr inspect PATH [--json]                  the holder and the queue: data, session, age
//	zkr count get|set|add PATH [N]             read or change a SharedCount or DistributedAtomicLong
//	zkr barrier set|remove|wait PATH           a Curator DistributedBarrier
//	zkr queue put|take|ls PATH                 a work queue (Curator's DistributedQueue with a lockPath)
//	zkr services [NAME]                         list services and their instances (curator-x-discovery)
//	zkr register NAME ADDR:PORT -- CMD ...      register an instance while CMD runs
//	zkr watch PATH [-r]                        print the node (-r: the tree) and every change
//	zkr ls PATH [-R]                           list the children (-R: the tree, full paths)
//	zkr get PATH [-s]                          write the data to stdout as it is (-s: the stat on stderr)
//	zkr stat PATH                              print the stat
//	zkr set PATH DATA|- [-v VERSION]           write the data (-: from stdin), at that version only
//	zkr create PATH [DATA|-] [-p] [-s] [-c | --ttl D]   create a node (parents, sequential, container, TTL)
//	zkr rm PATH [-r] [-v VERSION]              delete the node (-r: and its descendants)
//	zkr config [--json]                        print the ensemble's configuration
//
// The node commands are zkCli.sh's, for scripts: they take -v for a
// version (--verbose logs), create makes no ephemeral node (it would go
// as zkr exits), and their exit status tells a missing node (66) from a
// node not as required (65: it exists, moved to another version, has
// children).
//
// Servers come from --servers or ZK_SERVERS (host:port,...; names are
// resolved at each connection attempt), and zkr follows the ensemble's
// configuration as it changes (zkrecipes.WithEnsembleTracking). Every
// command takes --help, --namespace NS (every PATH under /NS, as Curator's
// namespace), and the flags for secured ensembles: --tls-ca, --tls-cert,
// --tls-key, --tls-server-name (TLS), --sasl digest-md5 with --sasl-user and
// the password in $ZKR_SASL_PASSWORD or --sasl-password-file (never on the
// command line), --sasl gssapi with --krb-keytab and --krb-principal or a
// kinit credential cache (Kerberos). See docs/security.md.
//
// While CMD runs it sees ZKR_LOCK_PATH (the path) and ZKR_FENCING_TOKEN (the
// lease's token: pass it to the storage CMD writes). CMD runs in its own
// process group; zkr forwards SIGINT, SIGTERM and SIGHUP to it. If
// ownership is lost while CMD runs (connection lost, session expired, node
// deleted), zkr sends the group SIGTERM, then SIGKILL after --grace. On
// every exit path zkr deletes its node before it exits.
//
// Exit status:
//
//	0-125 CMD's own exit status (128+N if it died of signal N)
//	64    usage error (a bad path too)
//	65    node commands: the node exists, has another version, or has children;
//	      queue take: the item is not in Curator's item encoding (put back)
//	66    node commands: no such node (create: no parent)
//	69    ZooKeeper unavailable, or a ZooKeeper error
//	73    not acquired: --wait elapsed before the lock was free (queue take: no item)
//	74    ownership lost while CMD ran (CMD was terminated); queue take: the
//	      item's lock was lost and another consumer took it before the ack
//	126   CMD could not be executed
//	127   CMD not found
//	130   interrupted (SIGINT, SIGTERM) before CMD started
package main

import (
	"fmt"
	"os"
)

// Exit codes; see the package documentation (the node commands' 65 and 66
// are in nodes.go).
const (
	exitUsage       = 64
	exitUnavailable = 69
	exitNotAcquired = 73
	exitLost        = 74
	exitCannotExec  = 126
	exitNotFound    = 127
	exitInterrupted = 130
)

const usage = `zkr: ZooKeeper locks, leader election and nodes for shell commands (Curator-compatible)

usage:
  zkr lock PATH [flags] -- CMD [ARGS...]    run CMD while holding the lock on PATH
  zkr lock -n N PATH [flags] -- CMD ...     the same with a semaphore of N permits
  zkr elect PATH [flags] [-- CMD ...]       campaign; lead until Ctrl-C, or run CMD while leading
  zkr elect PATH --listen                   print every change of leader
  zkr inspect PATH [--json]                 show the holder and the queue
  zkr count get|set|add PATH [N]            read or change a shared counter
  zkr barrier set|remove|wait PATH          set, remove, or wait until removed
  zkr queue put|take|ls PATH                put an item, take one (print, then ack), list them
  zkr services [NAME]                       list services and instances (curator-x-discovery)
  zkr register NAME ADDR:PORT -- CMD ...    register an instance while CMD runs
  zkr watch PATH [-r]                       print the node (-r: the tree) and every change
  zkr config [--json]                       print the ensemble's members and configuration version
  zkr version                               print zkr's version

nodes, as zkCli.sh (data as it is on stdout; -v VERSION: only at that version):
  zkr ls PATH [-R]                          list the children (-R: the whole tree)
  zkr get PATH [-s]                         write the data to stdout (-s: the stat on stderr)
  zkr stat PATH                             print the stat
  zkr set PATH DATA|- [-v VERSION]          write DATA, or stdin with -
  zkr create PATH [DATA|-] [-p] [-s] [-c | --ttl D]   create (parents, sequential, container, TTL)
  zkr rm PATH [-r] [-v VERSION]             delete (-r: with its descendants)

Run 'zkr COMMAND --help' for the flags of a command.
Servers come from --servers or $ZK_SERVERS; --namespace NS roots every PATH under /NS.
Secured ensembles: --tls-ca/--tls-cert/--tls-key,
--sasl digest-md5 --sasl-user U (password in $ZKR_SASL_PASSWORD or --sasl-password-file),
--sasl gssapi --krb-keytab F --krb-principal P.
Exit status: CMD's own; 64 usage, 69 ZooKeeper error, 73 not acquired in time,
74 ownership lost while CMD ran, 126/127 CMD not executable/found, 130 interrupted;
node commands: 66 no such node, 65 node exists, has another version or has children;
queue take: 73 no item in time, 74 item taken by another consumer before the ack,
65 item not in Curator's encoding.
`

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "lock":
		return cmdLock(args[1:])
	case "elect":
		return cmdElect(args[1:])
	case "inspect":
		return cmdInspect(args[1:])
	case "count":
		return cmdCount(args[1:])
	case "barrier":
		return cmdBarrier(args[1:])
	case "queue":
		return cmdQueue(args[1:])
	case "services":
		return cmdServices(args[1:])
	case "register":
		return cmdRegister(args[1:])
	case "watch":
		return cmdWatch(args[1:])
	case "ls":
		return cmdLs(args[1:])
	case "get":
		return cmdGet(args[1:])
	case "stat":
		return cmdStat(args[1:])
	case "set":
		return cmdSet(args[1:])
	case "create":
		return cmdCreate(args[1:])
	case "rm":
		return cmdRm(args[1:])
	case "config":
		return cmdConfig(args[1:])
	case "version":
		return cmdVersion(args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "zkr: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
