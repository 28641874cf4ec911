//go:build linux

package testredis

import "syscall"

// sysProcAttr puts redis-server in its own process group (so Kill reaches
// any child it forked) and asks the kernel to SIGKILL it when the test binary
// dies without running its cleanups (for example on a go test timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
