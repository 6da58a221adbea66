package local

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// NoFlags is the command line of a program configured by its environment alone
// (cmd/local, cmd/demo): -h or --help prints usage (a format with one %s, the
// program's name) to out and returns exit status 0, anything else prints it and
// returns 2, and no arguments return -1: go on.
func NoFlags(name, usage string, args []string, out io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprintf(out, usage, name) }
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil || fs.NArg() > 0:
		fs.Usage()
		return 2
	}
	return -1
}
