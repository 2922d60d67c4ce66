package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine describes where the figures were taken.
type Machine struct {
	Date         string `json:"date"`
	CPUs         int    `json:"nproc"`
	CPUModel     string `json:"cpu_model"`
	Memory       string `json:"memory"`
	Kernel       string `json:"kernel"`
	Go           string `json:"go"`
	Java         string `json:"java"`
	LoadAvgStart string `json:"loadavg_start"`
	LoadAvgEnd   string `json:"loadavg_end"`
}

func machine() Machine {
	m := Machine{
		Date:         time.Now().UTC().Format(time.RFC3339),
		CPUs:         runtime.NumCPU(),
		CPUModel:     procField("/proc/cpuinfo", "model name"),
		Memory:       procField("/proc/meminfo", "MemTotal"),
		Go:           runtime.Version(),
		LoadAvgStart: loadavg(),
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		m.Java = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	}
	return m
}

// procField returns the value of the first "key : value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadavg returns the 1, 5 and 15 minute load averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func writeFile(path string, write func(w io.Writer) (int64, error)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
