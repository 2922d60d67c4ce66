package docker

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// A test binary that is killed (SIGKILL, a CI job's timeout) runs no cleanup, and
// Ryuk, the reaper testcontainers would start, is off here (its image needs a
// registry). So every container carries its creator's host, pid and process start
// time, and each new docker backend removes the containers whose creator, on this
// host, is gone. A container from a host of another name, or without the start
// time (an older harness), is left alone: a pid alone may have been reused.

const (
	labelZKTest   = "org.zkrecipes.zktest"
	labelHost     = "org.zkrecipes.zktest.host"
	labelPID      = "org.zkrecipes.zktest.pid"
	labelPIDStart = "org.zkrecipes.zktest.pidstart"
)

// ownerLabels are the labels of a container this process starts.
func ownerLabels() map[string]string {
	host, _ := os.Hostname()
	labels := map[string]string{
		labelZKTest: "1",
		labelHost:   host,
		labelPID:    strconv.Itoa(os.Getpid()),
	}
	if start := processStart(os.Getpid()); start != "" {
		labels[labelPIDStart] = start
	}
	return labels
}

// processStart returns pid's start time as /proc/<pid>/stat gives it (clock
// ticks after boot, the 22nd field), or "" when there is no such process or no
// /proc to tell.
func processStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces and ')'
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:]) // from the 3rd field on
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// orphaned reports whether a container with these labels was started on host by
// a process that is gone.
func orphaned(labels map[string]string, host string) bool {
	if labels[labelHost] != host || labels[labelPIDStart] == "" {
		return false
	}
	pid, err := strconv.Atoi(labels[labelPID])
	if err != nil || pid <= 0 {
		return false
	}
	return processStart(pid) != labels[labelPIDStart]
}

// reapOrphans removes the containers of test processes on this host that are
// gone, and returns how many it removed.
func (b *dockerBackend) reapOrphans(ctx context.Context) (int, error) {
	host, err := os.Hostname()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", labelZKTest+"=1")})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range list.Items {
		if !orphaned(c.Labels, host) {
			continue
		}
		if _, err := b.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			return n, fmt.Errorf("removing orphaned container %.12s: %w", c.ID, err)
		}
		n++
	}
	return n, nil
}
