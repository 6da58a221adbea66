//go:build !linux

package deadlinebench

import "time"

// ownCPU is only measured on Linux.
func ownCPU() (time.Duration, bool) { return 0, false }

// childrenCPU is only measured on Linux.
func childrenCPU() (time.Duration, bool) { return 0, false }
