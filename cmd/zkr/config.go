package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
)

const configHelp = `usage: zkr config [--json] [flags]

Prints the ensemble's configuration as the servers hold it (/zookeeper/config,
read after a sync with the leader): its version, and each member's id, role,
client address (what clients dial), and quorum and election addresses; then the
connection string of the members' client addresses, which zkrecipes Sessions and
Curator clients follow when the configuration changes. A standalone server, or an
ensemble whose members give no client address in their server lines, lists none.

flags:
`

// configReport is what zkr config --json prints.
type configReport struct {
	Version  string         `json:"version"` // hexadecimal, as in the "version=" line
	Members  []configMember `json:"members"`
	Servers  []string       `json:"servers"` // the members' client addresses
	Observed string         `json:"connected_to"`
}

type configMember struct {
	ID       int64    `json:"id"`
	Role     string   `json:"role"`
	Client   string   `json:"client,omitempty"`
	Quorum   []string `json:"quorum"`
	Election []string `json:"election"`
	Line     string   `json:"line"`
}

func cmdConfig(args []string) int {
	fs := newFlagSet("zkr config", configHelp)
	var c common
	c.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, argv, code, ok := parseOrExit(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 || argv != nil {
		return usageErr(fs.Name(), "takes no argument")
	}
	ctx, s, done, code := c.request(fs.Name())
	if s == nil {
		return code
	}
	defer done()
	cfg, err := s.Config(ctx)
	if err != nil {
		return zkErr(fs.Name(), err)
	}
	rep := configReport{Version: fmt.Sprintf("%x", cfg.Version), Servers: cfg.Servers(), Observed: s.Conn().Server()}
	if rep.Servers == nil {
		rep.Servers = []string{}
	}
	for _, m := range cfg.Members {
		rep.Members = append(rep.Members, configMember{ID: m.ID, Role: m.Role.String(), Client: m.Client,
			Quorum: m.Quorum, Election: m.Election, Line: m.Line})
	}
	if rep.Members == nil {
		rep.Members = []configMember{}
	}
	if *asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Println(string(b))
		return 0
	}
	fmt.Printf("version %s (read from %s)\n", rep.Version, rep.Observed)
	if len(rep.Members) == 0 {
		fmt.Println("no members listed (a standalone server)")
		return 0
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tROLE\tCLIENT\tQUORUM\tELECTION")
	for _, m := range rep.Members {
		client := m.Client
		if client == "" {
			client = "-"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", m.ID, m.Role, client, strings.Join(m.Quorum, ","), strings.Join(m.Election, ","))
	}
	_ = w.Flush()
	if len(rep.Servers) > 0 {
		fmt.Printf("connection string: %s\n", strings.Join(rep.Servers, ","))
	}
	return 0
}
