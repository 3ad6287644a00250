package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set by release builds: -ldflags "-X main.version=v1.2.3 -X main.commit=abc".
// Left empty, they come from the build info Go records (the module version of `go install
// …@v1.2.3`, the VCS revision of a build in a checkout).
var (
	version = ""
	commit  = ""
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print zero502's version and commit (also zero502 --version, -v)",
		Example: "  zero502 version\n  zero502 -v",
		Args:    cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "zero502 %s\n", buildVersion())
		},
	}
}

// buildVersion is "V (commit C)": the stamped version and commit, else the build info's.
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(version, commit, bi)
}

// versionOf picks the version and commit to show: the stamped ones first; else the module
// version of the build (a `go install …@v1.2.3`; "(devel)" for a build in a checkout) and its
// VCS revision, with "+dirty" when the tree had changes.
func versionOf(stamped, stampedCommit string, bi *debug.BuildInfo) string {
	v, c, dirty := stamped, stampedCommit, false
	if bi != nil {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.modified" && s.Value == "true" && stampedCommit == "":
				dirty = true
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	} else if dirty {
		c += "+dirty"
	}
	return fmt.Sprintf("%s (commit %s)", v, c)
}
