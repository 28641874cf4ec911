//go:build !linux

package testkafka

import "syscall"

// scriptProcAttr returns no special attributes: without Pdeathsig, the
// script's watchdog alone covers a dying test binary.
func scriptProcAttr() *syscall.SysProcAttr { return nil }

// jvmAlive reports whether pid is a running process (config is not checked
// on this platform).
func jvmAlive(pid int, config string) bool {
	return syscall.Kill(pid, 0) == nil
}

// procID identifies one process by its pid only on this platform.
type procID struct{ pid int }

// identify returns pid's identity.
func identify(pid int) procID { return procID{pid: pid} }

// gone reports whether no process with the pid exists any more.
func (id procID) gone() bool { return syscall.Kill(id.pid, 0) != nil }
