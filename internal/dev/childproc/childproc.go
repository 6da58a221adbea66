// Package childproc runs the local servers the tests and the local stack depend on
// (moto's server, stripe-mock) as child processes: output to a log file, gone with
// the process that started them, stopped with SIGTERM and then SIGKILL, and a
// readable reason when one ends by itself.
package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StopTimeout is how long Stop waits after SIGTERM before it kills the process.
const StopTimeout = 5 * time.Second

// Process is a started child process.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	exitErr error // how the process ended, once exited is closed
	stop    sync.Once
}

// Start starts cmd with its standard output and error appended to the file at
// logPath (created if need be). name is what messages call the process.
func Start(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("childproc: log of %s: %w", name, err)
	}
	defer log.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("childproc: start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() { p.exitErr = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitReason says how the process ended, with the last lines of its log; call it
// once Exited is closed.
func (p *Process) ExitReason() string {
	how := "exited"
	if p.exitErr != nil {
		how = p.exitErr.Error()
	}
	lines := strings.Split(strings.TrimSpace(p.LogTail()), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return fmt.Sprintf("%s %s; the end of its log:\n%s", p.name, how, strings.Join(lines, "\n"))
}

// LogTail returns the end of the process's log, at most 4,000 bytes.
func (p *Process) LogTail() string {
	const max = 4000
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Stop sends the process SIGTERM, kills it if it has not ended within StopTimeout,
// and waits for it. It is safe to call more than once; the log is left in place.
func (p *Process) Stop() {
	p.stop.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(StopTimeout):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }
