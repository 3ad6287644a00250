package main

import (
	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer/demo"
	"github.com/zero502/zero502/infra/config"
)

// registerCompletions gives shell completion (zero502 completion bash|zsh|fish) the values of
// flags by their name, on every command that has them: --runtime, --log-format and
// --log-level their choices, --config the YAML files, and --host and --service on a command
// with --config the names in that config. Commands whose flag of the same name means something
// else (demo --service) register their own first, and are left alone.
func registerCompletions(cmd *cobra.Command) {
	fixed := map[string][]string{
		"runtime":    {config.RuntimeProcess, config.RuntimeDocker},
		"log-format": logFormats,
		"log-level":  logLevels,
	}
	f := cmd.Flags()
	for name, values := range fixed {
		if f.Lookup(name) != nil {
			completeOnce(cmd, name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return values, cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
	if f.Lookup("config") != nil {
		completeOnce(cmd, "config", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
		})
		if f.Lookup("host") != nil {
			completeOnce(cmd, "host", configNames(func(c *config.Config) (names []string) {
				for _, h := range c.Hosts {
					names = append(names, h.Name)
				}
				return names
			}))
		}
		if f.Lookup("service") != nil {
			completeOnce(cmd, "service", configNames(func(c *config.Config) (names []string) {
				for _, s := range c.Services {
					names = append(names, s.Name)
				}
				return names
			}))
		}
	}
	for _, sub := range cmd.Commands() {
		registerCompletions(sub)
	}
}

// completeOnce registers fn for the flag unless the command registered one of its own.
func completeOnce(cmd *cobra.Command, flag string, fn cobra.CompletionFunc) {
	if _, ok := cmd.GetFlagCompletionFunc(flag); ok {
		return
	}
	_ = cmd.RegisterFlagCompletionFunc(flag, fn)
}

// configNames completes from the config that --config names (stdin's "-" offers nothing); a
// config that does not load offers nothing either.
func configNames(names func(*config.Config) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		path, err := cmd.Flags().GetString("config")
		if err != nil || path == "" || path == "-" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, err := config.Load(path)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names(cfg), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeDemoService gives demo --service its own choices (not the config's services).
func completeDemoService(cmd *cobra.Command) {
	completeOnce(cmd, "service", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{demo.ServiceApp, demo.ServicePython}, cobra.ShellCompDirectiveNoFileComp
	})
}
