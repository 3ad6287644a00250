package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/zero502/zero502/deployer"
)

// parallelFlag is --parallel: how many hosts are looked at at once (at least 1).
func parallelFlag(f *pflag.FlagSet, p *int) {
	*p = deployer.DefaultParallel
	f.Var((*parallelValue)(p), "parallel",
		"how many hosts preflight, re-verify and status look at at once, one ssh session each (batches still roll one after another)")
}

type parallelValue int

func (v *parallelValue) String() string { return strconv.Itoa(int(*v)) }
func (v *parallelValue) Type() string   { return "int" }
func (v *parallelValue) rules()         {}
func (v *parallelValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("%q: must be a whole number of hosts, at least 1 (1 looks at one host after another)", s)
	}
	*v = parallelValue(n)
	return nil
}
