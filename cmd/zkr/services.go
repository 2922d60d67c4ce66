package main

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
)

const servicesHelp = `usage: zkr services [NAME] [flags]

Lists the services registered under --base (Curator's curator-x-discovery
layout: BASE/NAME/ID holding the instance as JSON) and their instances, or
the instances of NAME only. A node that is not an instance is skipped.

flags:
`

func cmdServices(args []string) int {
	fs := newFlagSet("zkr services", servicesHelp)
	var c common
	c.register(fs)
	base := fs.String("base", "/services", "base path of the services")
	asJSON := fs.Bool("json", false, "print one JSON object per instance (Curator's format)")
	pos, rest, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 || rest != nil {
		return usageErr(fs.Name(), "want at most one service NAME")
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.connectTimeout+30*time.Second)
	defer cancel()
	s, err := c.connect(ctx)
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	defer s.Close()
	d := discovery.New(s, *base)
	names := pos
	if len(names) == 0 {
		if names, err = d.QueryForNames(ctx); err != nil {
			return discoveryErr(fs.Name(), err)
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "SERVICE\tID\tADDRESS\tSSL\tTYPE\tREGISTERED\tURI")
	}
	for _, name := range names {
		ins, err := d.QueryForInstances(ctx, name)
		if err != nil {
			return discoveryErr(fs.Name(), err)
		}
		for _, i := range ins {
			if *asJSON {
				b, err := i.Marshal()
				if err != nil {
					return discoveryErr(fs.Name(), err)
				}
				fmt.Println(string(b))
				continue
			}
			uri, _ := i.URI(nil)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, i.ID, hostPort(i.Address, i.Port), portOrDash(i.SSLPort),
				i.Type, i.RegistrationTime.UTC().Format(time.RFC3339), dash(uri))
		}
	}
	tw.Flush()
	return 0
}

func hostPort(addr string, port int) string {
	if port == 0 {
		return dash(addr)
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

func portOrDash(p int) string {
	if p == 0 {
		return "-"
	}
	return strconv.Itoa(p)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// discoveryErr reports a discovery failure: 64 for a bad name or
// instance, as zkErr otherwise.
func discoveryErr(name string, err error) int {
	if errors.Is(err, discovery.ErrBadName) || errors.Is(err, discovery.ErrBadInstance) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return exitUsage
	}
	return zkErr(name, err)
}

const registerHelp = `usage: zkr register NAME ADDRESS:PORT [flags] -- CMD [ARGS...]

Registers an instance of service NAME (Curator's curator-x-discovery format,
found by Java's ServiceDiscovery and by zkr services) while CMD runs, then
unregisters it and exits with CMD's status. The registration is ephemeral and
made again after a session expiry. CMD sees ZKR_SERVICE_NAME and
ZKR_INSTANCE_ID. Ctrl-C is forwarded to CMD.

flags:
`

func cmdRegister(args []string) int {
	fs := newFlagSet("zkr register", registerHelp)
	var c common
	c.register(fs)
	base := fs.String("base", "/services", "base path of the services")
	id := fs.String("id", "", "instance id (default: a random UUID, as Curator)")
	payload := fs.String("payload", "", "instance payload, as JSON (an object is read by Java as a Map)")
	uriSpec := fs.String("uri-spec", "", `Curator UriSpec, such as "{scheme}://{address}:{port}/"`)
	sslPort := fs.Int("ssl-port", 0, "SSL port (0: none)")
	pos, argv, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) != 2:
		return usageErr(fs.Name(), "want NAME and ADDRESS:PORT, got %d arguments", len(pos))
	case len(argv) == 0 || argv[0] == "":
		return usageErr(fs.Name(), "missing -- CMD")
	case c.servers == "":
		return usageErr(fs.Name(), "no servers: use --servers or set ZK_SERVERS")
	case *payload != "" && !json.Valid([]byte(*payload)):
		return usageErr(fs.Name(), "--payload is not valid JSON")
	}
	host, portStr, err := net.SplitHostPort(pos[1])
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		return usageErr(fs.Name(), "want ADDRESS:PORT, got %q", pos[1])
	}
	inst := discovery.Instance{Name: pos[0], ID: *id, Address: host, Port: port, SSLPort: *sslPort, URISpec: *uriSpec}
	if inst.ID == "" {
		inst.ID = randomUUID()
	}
	if *payload != "" {
		inst.Payload = json.RawMessage(*payload)
	}

	w, err := c.startWaiting(0)
	defer w.close()
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	d := discovery.New(w.s, *base)
	_, err = interruptible(w.ctx, w.cancel, w.sigs, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, d.Register(ctx, inst)
	})
	if err != nil {
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.Close(cctx)
		ccancel()
		return discoveryErr(fs.Name(), err)
	}
	fmt.Fprintf(os.Stderr, "zkr register: %s/%s/%s registered\n", *base, inst.Name, inst.ID)
	code = runRegistered(argv, inst, w.sigs)
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if err := d.Close(cctx); err != nil {
		fmt.Fprintf(os.Stderr, "zkr register: unregister: %v\n", err)
	}
	return code
}

// runRegistered runs argv in its own process group, forwarding the
// signals from sigs, and returns its exit status.
func runRegistered(argv []string, inst discovery.Instance, sigs <-chan os.Signal) int {
	cmd, code := startCommand(argv, "ZKR_SERVICE_NAME="+inst.Name, "ZKR_INSTANCE_ID="+inst.ID)
	if cmd == nil {
		return code
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	for {
		select {
		case <-done:
			return exitStatus(cmd.ProcessState)
		case s := <-sigs:
			signalGroup(cmd, s)
		}
	}
}

// randomUUID returns a version 4 UUID, the form Curator's instance ids
// take by default.
func randomUUID() string {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
