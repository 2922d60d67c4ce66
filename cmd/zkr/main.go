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
//	zkr services [NAME]                         list services and their instances (curator-x-discovery)
//	zkr register NAME ADDR:PORT -- CMD ...      register an instance while CMD runs
//	zkr watch PATH [-r]                        print the node (-r: the tree) and every change
//	zkr config [--json]                        print the ensemble's configuration
//
// Servers come from --servers or ZK_SERVERS (host:port,...; names are
// resolved at each connection attempt), and zkr follows the ensemble's
// configuration as it changes (zkrecipes.WithEnsembleTracking). Every
// command takes --help, and the flags for secured ensembles: --tls-ca,
// --tls-cert, --tls-key, --tls-server-name (TLS), --sasl digest-md5 with --sasl-user and
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
//	64    usage error
//	69    ZooKeeper unavailable, or a ZooKeeper error
//	73    not acquired: --wait elapsed before the lock was free
//	74    ownership lost while CMD ran (CMD was terminated)
//	126   CMD could not be executed
//	127   CMD not found
//	130   interrupted (SIGINT, SIGTERM) before CMD started
package main

import (
	"fmt"
	"os"
)

// Exit codes; see the package documentation.
const (
	exitUsage       = 64
	exitUnavailable = 69
	exitNotAcquired = 73
	exitLost        = 74
	exitCannotExec  = 126
	exitNotFound    = 127
	exitInterrupted = 130
)

const usage = `zkr: ZooKeeper locks and leader election for shell commands (Curator-compatible)

usage:
  zkr lock PATH [flags] -- CMD [ARGS...]    run CMD while holding the lock on PATH
  zkr lock -n N PATH [flags] -- CMD ...     the same with a semaphore of N permits
  zkr elect PATH [flags] [-- CMD ...]       campaign; lead until Ctrl-C, or run CMD while leading
  zkr elect PATH --listen                   print every change of leader
  zkr inspect PATH [--json]                 show the holder and the queue
  zkr count get|set|add PATH [N]            read or change a shared counter
  zkr barrier set|remove|wait PATH          set, remove, or wait until removed
  zkr services [NAME]                       list services and instances (curator-x-discovery)
  zkr register NAME ADDR:PORT -- CMD ...    register an instance while CMD runs
  zkr watch PATH [-r]                       print the node (-r: the tree) and every change
  zkr config [--json]                       print the ensemble's members and configuration version

Run 'zkr COMMAND --help' for the flags of a command.
Servers come from --servers or $ZK_SERVERS. Secured ensembles: --tls-ca/--tls-cert/--tls-key,
--sasl digest-md5 --sasl-user U (password in $ZKR_SASL_PASSWORD or --sasl-password-file),
--sasl gssapi --krb-keytab F --krb-principal P.
Exit status: CMD's own; 64 usage, 69 ZooKeeper error, 73 not acquired in time,
74 ownership lost while CMD ran, 126/127 CMD not executable/found, 130 interrupted.
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
	case "services":
		return cmdServices(args[1:])
	case "register":
		return cmdRegister(args[1:])
	case "watch":
		return cmdWatch(args[1:])
	case "config":
		return cmdConfig(args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "zkr: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}
