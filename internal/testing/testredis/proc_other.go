//go:build !linux

package testredis

import "syscall"

// sysProcAttr puts redis-server in its own process group so Kill reaches any
// child it forked.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
