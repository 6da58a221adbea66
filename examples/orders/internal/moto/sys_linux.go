package moto

import "syscall"

// sysProcAttr makes the server die with the test binary that started it, so that
// a binary killed by a timeout leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
