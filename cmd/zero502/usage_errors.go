package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exitTwoOnUsageErrors makes every flag or argument error of cmd and its subcommands exit 2
// (the help defines 1 as "rollout failed" or "violated"): the root's flag error function, which
// cobra hands down to every subcommand, each command's argument check, wrapped once here, and
// an unknown subcommand of a command group.
func exitTwoOnUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitCode(2, fmt.Errorf("%s: %s (see %s --help)", c.CommandPath(), flagMessage(err), c.CommandPath()))
	})
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			// A group (zero502, zero502 mesh…): its help without arguments, else an unknown command,
			// whatever Args it was given (cobra shows a group's help for any argument and exits 0: a
			// host command an older zero502 lacks would pass for done over ssh).
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return cmd.Help()
				}
				return exitCode(2, fmt.Errorf("unknown command %q for %s (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath()))
			}
		}
		if check := c.Args; check != nil {
			c.Args = func(cmd *cobra.Command, args []string) error {
				if err := check(cmd, args); err != nil {
					return exitCode(2, fmt.Errorf("%s: %w (usage: %s; see --help)", cmd.CommandPath(), err, cmd.UseLine()))
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// rulingValue is a flag value whose Set error already says the value and the rule.
type rulingValue interface{ rules() }

// flagMessage says what is wrong with a flag's value in the flag's own terms, without the
// parser's internals (strconv.ParseInt: parsing "abc": invalid syntax).
func flagMessage(err error) string {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err.Error()
	}
	f := bad.GetFlag()
	if _, own := f.Value.(rulingValue); own && errors.Unwrap(bad) != nil {
		return fmt.Sprintf("--%s %v", f.Name, errors.Unwrap(bad))
	}
	want := "a valid value"
	switch f.Value.Type() {
	case "int", "int64", "int32", "uint", "uint64", "uint32":
		want = "a whole number"
	case "float64", "float32":
		want = "a number"
	case "duration":
		want = "a duration with a unit, e.g. 3s, 250ms or 5m"
	case "bool":
		want = "true or false"
	}
	usage := strings.TrimSpace(f.Usage)
	if usage != "" {
		usage = " (" + usage + ")"
	}
	return fmt.Sprintf("--%s %q: must be %s%s", f.Name, bad.GetValue(), want, usage)
}
