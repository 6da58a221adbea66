package deadlinebench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ownCPU returns the CPU time (user and system) this process has used so far.
func ownCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ), 100 per second
// on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// childrenCPU returns the CPU time (user and system) used so far by the processes this
// one started and their descendants, still running (moto's server, here), read from
// /proc.
func childrenCPU() (time.Duration, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	type proc struct {
		ppid int
		cpu  time.Duration
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// The command name, in parentheses, may hold spaces: fields start after it.
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		utime, err2 := strconv.ParseInt(f[11], 10, 64)
		stime, err3 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		procs[pid] = proc{ppid: ppid, cpu: time.Duration(utime+stime) * clockTick}
	}
	self := os.Getpid()
	var total time.Duration
	found := false
	for _, p := range procs {
		for anc, hops := p.ppid, 0; anc > 1 && hops < 64; anc, hops = procs[anc].ppid, hops+1 {
			if anc == self {
				total += p.cpu
				found = true
				break
			}
			if _, ok := procs[anc]; !ok {
				break
			}
		}
	}
	return total, found
}
