//go:build linux

package testkafka

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// scriptProcAttr asks the kernel to SIGKILL the script when the test binary
// dies while it runs; the JVMs it started are covered by its watchdog.
func scriptProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// jvmAlive reports whether pid is a running kafka.Kafka JVM started with
// config, so a recycled pid is never mistaken for a broker. A dying JVM
// (memory already released) no longer counts.
func jvmAlive(pid int, config string) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(kafkaMain+"\x00"+config))
}

// procID identifies one process: its pid and its start time, so a later
// process with a recycled pid is told apart.
type procID struct {
	pid   int
	start string
}

// identify returns pid's identity; start is empty when pid does not exist.
func identify(pid int) procID {
	_, start, _ := procStat(pid)
	return procID{pid: pid, start: start}
}

// gone reports whether the process has finished exiting: reaped (no such
// process, or another one with the same pid), or a zombie whose other
// threads have all exited too. Only then are its files, sockets included,
// closed: while a JVM's threads are still exiting its listening socket can
// accept a connection and then reset it.
func (id procID) gone() bool {
	state, start, ok := procStat(id.pid)
	if !ok || start != id.start {
		return true
	}
	if state != 'Z' && state != 'X' {
		return false
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(id.pid) + "/task")
	return err != nil || len(tasks) <= 1
}

// procStat returns the state (field 3) and start time (field 22) of pid
// from /proc/<pid>/stat; ok is false when pid does not exist.
func procStat(pid int) (state byte, start string, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, "", false
	}
	return fields[0][0], fields[19], true
}
