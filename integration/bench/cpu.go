package bench

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU accounting: on a machine whose cores the server and its clients
// share, throughput follows the CPU each acquisition costs. These read it
// from /proc (Linux only; elsewhere they fail and the figures stay zero).

// userHZ is the unit of the CPU times in /proc/<pid>/stat (USER_HZ, fixed
// at 100 by the Linux ABI).
const userHZ = 100

// ProcCPU returns the CPU time process pid has used: the sum over its
// threads of /proc/<pid>/task/<tid>/schedstat (nanoseconds; threads that
// have exited no longer count, which is why it is read around a phase in
// which the process keeps its threads), or, without schedstat, the user
// plus system time of /proc/<pid>/stat (in 10 ms ticks).
func ProcCPU(pid int) (time.Duration, error) {
	if d, err := schedCPU(pid); err == nil {
		return d, nil
	}
	return statCPU(pid)
}

func schedCPU(pid int) (time.Duration, error) {
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(files) == 0 {
		return 0, fmt.Errorf("bench: no schedstat for process %d", pid)
	}
	var total int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has just exited
		}
		fs := strings.Fields(string(b))
		if len(fs) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: %s: %q", f, b)
		}
		total += ns
	}
	return time.Duration(total), nil
}

func statCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat: bad utime/stime", pid)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// ListenerPID returns the process listening on the TCP address addr
// ("127.0.0.1:port") of this machine, found through /proc/net/tcp and the
// processes' open sockets.
func ListenerPID(addr string) (int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	ip := net.ParseIP(host).To4()
	p, err := strconv.Atoi(port)
	if ip == nil || err != nil {
		return 0, fmt.Errorf("bench: %q is not an IPv4 address and port", addr)
	}
	// /proc/net/tcp writes the address as the 32-bit word in host (little
	// endian) order, then the port: 127.0.0.1:2181 is 0100007F:0885.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], p)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	inode := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 9 && fs[1] == local && fs[3] == "0A" { // LISTEN
			inode = fs[9]
			break
		}
	}
	if inode == "" {
		return 0, fmt.Errorf("bench: no listener on %s in /proc/net/tcp", addr)
	}
	want := "socket:[" + inode + "]"
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == want {
			return strconv.Atoi(strings.Split(fd, "/")[2])
		}
	}
	return 0, fmt.Errorf("bench: the process listening on %s is not visible", addr)
}

// PerOp divides a time among n operations (zero for none).
func PerOp(d time.Duration, n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return d / time.Duration(n)
}
