package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/stopsignal"
)

func newHostCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "host",
		Short: "The deployer's side on a server of a fleet over SSH",
		Long: `host is what zero502 deploy runs ON a host whose config entry has ssh: user@host[:port],
through the system ssh client (so ~/.ssh/config, agents and ProxyJump apply; ZERO502_SSH_OPTS adds
options such as -i KEY). The deployer sends its config over stdin (--config -): the server needs
no copy of it. People rarely run step or look by hand; install sets a server up.`,
		Example: `  zero502 host install --ssh deploy@10.0.1.12
  zero502 host look --config zero502.yaml --host web-1 --version v2
  ssh deploy@10.0.1.12 zero502 host step --config - --host web-1 --version v2 < zero502.yaml`,
	}
	cmd.AddCommand(newHostStepCmd(), newHostLookCmd(), newHostStopCmd(), newHostLogsCmd(), newHostInstallCmd(), newHostLockPathCmd(), newHostFleetLockCmd(), newHostPauseCmd())
	return cmd
}

// hostConfig reads the config at path, or from stdin for "-". framed says the deployer sent it
// and stays connected: stdin's end then means it is gone.
func hostConfig(cmd *cobra.Command, path string) (cfg *config.Config, stdin *bufio.Reader, framed bool, err error) {
	if path != "-" {
		cfg, err = config.Load(path)
		return cfg, nil, false, err
	}
	stdin = bufio.NewReader(cmd.InOrStdin())
	data, vals, framed, err := deployer.ReadConfigStream(stdin)
	if err != nil {
		return nil, nil, false, err
	}
	if cfg, err = config.LoadSent(data, "from stdin"); err != nil {
		return nil, nil, false, err
	}
	cfg.SecretValues = vals
	return cfg, stdin, framed, nil
}

// hostFlags registers the two flags every host subcommand the deployer runs over ssh takes:
// --config, stdin by default (what sender sends there), and --host, which of the config's hosts
// this machine is.
func hostFlags(cmd *cobra.Command, cfgPath, name *string, sender string) {
	f := cmd.Flags()
	f.StringVarP(cfgPath, "config", "c", "-", "config file, or - for stdin (what "+sender+" sends)")
	f.StringVar(name, "host", "", "this host's name in the config (hosts[].name)")
}

// hostNamedConfig is hostConfig for a subcommand that needs --host: a bad-flag error (exit 2)
// when name is empty or the config does not load.
func hostNamedConfig(cmd *cobra.Command, cfgPath, name string) (cfg *config.Config, stdin *bufio.Reader, framed bool, err error) {
	if name == "" {
		return nil, nil, false, exitCode(2, errors.New("--host is required: this host's name in the config (hosts[].name)"))
	}
	cfg, stdin, framed, err = hostConfig(cmd, cfgPath)
	if err != nil {
		return nil, nil, false, exitCode(2, err)
	}
	return cfg, stdin, framed, nil
}

// untilDeployerGone is ctx, ended too when the deployer that sent the config framed on stdin
// goes (stdin ends: its ssh session is gone, or it closed stdin as it was cancelled), for a host
// command that waits or changes the host; a config read from a file (by hand) leaves ctx as it
// is. Such a command ignores SIGPIPE (signal.Ignore) so that a gone deployer does not kill it on
// its next line out, halfway through a change: it notices through stdin instead.
func untilDeployerGone(ctx context.Context, stdin io.Reader, framed bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if framed {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel() // the deployer is gone
		}()
	}
	return ctx, cancel
}

// hostResult is how a host subcommand that changes the host answers the deployer on the other
// end of ssh: each of the deployer's events (through opts.Events) as one JSON line on cmd's
// output while run works, then the result line run returns. When run fails, the exit code is 1
// and the result line says why.
func hostResult(cmd *cobra.Command, opts *deployer.Options, run func() (result any, err error)) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	opts.Events = func(e deployer.Event) { _ = enc.Encode(e) }
	res, err := run()
	_ = enc.Encode(res)
	if err != nil {
		return exitCode(1, nil) // the result line says why
	}
	return nil
}

// errorText is err's message for a result line: empty for no error.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func newHostStepCmd() *cobra.Command {
	var (
		cfgPath, name, version string
		opts                   deployer.Options
		lookFirst              bool
	)
	cmd := &cobra.Command{
		Use:   "step --config - --host NAME --version V",
		Short: "Run one host's deploy step here: lock, spec, handshake, verify (or roll back)",
		Long: `step runs host NAME's deploy step on this machine, exactly as zero502 deploy does for a local
host: the host's own lock, its own runtime, the drain handshake watched at the balancer, verify,
and on failure the rollback to its previous spec. It prints one JSON event per line, then
{"host_report":{…},"error":"…"}. When the deployer's connection goes (stdin ends), the step
fails and rolls back, and its exit releases the lock. With --look-first (how the deployer opens
it, at preflight) it first prints the host's look ({"look":{…}}, as host look) and changes
nothing until a "go" line on stdin. Exit 0: verified; 1: failed.`,
		Example: `  ssh deploy@10.0.1.12 zero502 host step --config - --host web-1 --version v2 < zero502.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" || version == "" {
				return exitCode(2, errors.New("--host and --version are required, e.g. --host web-1 --version v2"))
			}
			cfg, stdin, framed, err := hostConfig(cmd, cfgPath)
			if err != nil {
				return exitCode(2, err)
			}
			// A gone deployer must not kill the step by SIGPIPE on its next event: the step
			// notices through stdin instead, and rolls back.
			signal.Ignore(syscall.SIGPIPE)
			ctx, stop := stopsignal.Context(cmd.Context(), syscall.SIGHUP)
			defer stop()
			if lookFirst {
				if !framed {
					return exitCode(2, errors.New("--look-first waits for its turn on stdin: it needs --config - (the deployer's config stream)"))
				}
				if !deployer.AwaitTurn(ctx, cfg, name, version, stdin, cmd.OutOrStdout()) {
					return nil // the deployer went on without this host: nothing was changed
				}
			}
			ctx, cancel := untilDeployerGone(ctx, stdin, framed)
			defer cancel()
			if opts.LockTimeout == 0 {
				opts.NoLockWait = true // the deployer's --lock-timeout 0: refuse at once
			}
			return hostResult(cmd, &opts, func() (any, error) {
				rep, err := deployer.HostStep(ctx, cfg, name, version, opts)
				return deployer.StepResult{HostReport: &rep, Error: errorText(err)}, err
			})
		},
	}
	hostFlags(cmd, &cfgPath, &name, "the deployer")
	f := cmd.Flags()
	f.StringVar(&version, "version", "", "version to deploy")
	f.DurationVar(&opts.LockTimeout, "lock-timeout", deployer.DefaultLockTimeout, "how long to wait for the host lock (0: refuse at once)")
	f.BoolVar(&opts.Naive, "naive", false, "kill at once, no drain, no balancer watch (demos)")
	f.BoolVar(&opts.Back, "back", false, "a step back (a fleet's rollback): to the spec this host keeps from before its last deploy "+
		"when that is of --version, its config as it ran then; else to --version as the config renders it")
	f.BoolVar(&lookFirst, "look-first", false, "print this host's look first ({\"look\":…}, as host look), then wait for "+
		"a \"go\" line on stdin before changing anything; stdin ending first ends the step with nothing changed")
	return cmd
}

func newHostLookCmd() *cobra.Command {
	var cfgPath, name, version string
	cmd := &cobra.Command{
		Use:   "look --config - --host NAME [--version V]",
		Short: "Print this host's state as JSON: what runs, what is published, whether it answers",
		Long: `look reads host NAME's runtime and published spec on this machine and checks its balanced
service directly (not through the balancer), for the deployer's preflight and read-back. It
changes nothing and takes no lock.`,
		Example: `  zero502 host look --config /etc/zero502/zero502.yaml --host web-1 --version v2`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, framed, err := hostNamedConfig(cmd, cfgPath, name)
			if err != nil {
				return err
			}
			if version == "" {
				version = "none"
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), time.Minute)
			defer cancel()
			l, err := deployer.Look(ctx, cfg, name, version, deployer.Options{})
			if err != nil {
				return exitCode(1, err)
			}
			if !framed { // run by hand: no secret's digest for a person's terminal
				l = l.WithoutDigests()
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(l)
		},
	}
	hostFlags(cmd, &cfgPath, &name, "the deployer")
	cmd.Flags().StringVar(&version, "version", "", "the version about to be deployed (in_progress says whether it is published)")
	return cmd
}

func newHostInstallCmd() *cobra.Command {
	var target, binary, dest, stateDir, configDir, unitDir, configPath string
	cmd := &cobra.Command{
		Use:   "install --ssh user@host [--config FILE] [--binary PATH]",
		Short: "Put the zero502 binary, its state dir and its systemd units on a server, over ssh",
		Long: `install copies the zero502 binary (--binary, default: this one, which must be built for the
server's OS and CPU) to --dest on the server through ssh, creates the state dir and
--config-dir (/etc/zero502), and installs the daemons' systemd units into --unit-dir:
zero502-lb.service, zero502-edge.service and zero502-mesh.service (hardened: a dynamic user,
a read-only system, CAP_NET_BIND_SERVICE only for the LB and the edge), and with --config the
watchdog's zero502-watchdog.service and zero502-watchdog.timer, the timer ticking every
watchdog.interval of that config; then reloads systemd. It enables none of them. Nothing is
replaced until the upload is checked there (its size and sha256, and its version must run): a
failed install leaves the previous binary and units. The paths are the server's, absolute; the
state dir is made 0750. Run it as root, or as a user with passwordless sudo (the install then
runs through sudo -n; a state dir it creates then belongs to that user, whose watchdog needs
watchdog/systemd/deploy-user.conf). Then, by hand, once per server:
  1. the config: ssh user@host 'sudo -n sh -c "umask 022; cat > /etc/zero502/zero502.yaml"' < zero502.yaml
     (for the watchdog and the daemons, whose units run as a user of their own and must read it:
     keep tokens out of it, in /etc/zero502/lb.env or edge.env, mode 0600, which systemd reads;
     deploys send their config over stdin; as root: scp it there);
  2. the watchdog: ssh user@host systemctl enable --now zero502-watchdog.timer (installed with
     --config; without it, copy watchdog/systemd/zero502-watchdog.{service,timer} there and set
     the timer's OnActiveSec= and OnUnitActiveSec= to watchdog.interval);
  3. the runtime: Docker Engine for rollout.runtime docker (the user in the docker group), or
     nothing for process;
  4. in the deployer's config: hosts[].ssh user@host[:port] and hosts[].address (where the
     balancer reaches it). Check with: zero502 host look over ssh, or zero502 deploy (preflight);
  5. the daemons this server runs, if any: the balancer (systemctl enable --now zero502-lb),
     an edge (EDGE_ARGS in /etc/zero502/edge.env, then zero502-edge) or a mesh server
     (MESH_ARGS in /etc/zero502/mesh.env, then zero502-mesh); each unit's comment says how.`,
		Example: `  zero502 host install --ssh root@10.0.1.12
  GOOS=linux GOARCH=arm64 go build -o /tmp/zero502-arm64 ./cmd/zero502
  zero502 host install --ssh deploy@web-2:2222 --binary /tmp/zero502-arm64 --dest /usr/local/bin/zero502`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" {
				return exitCode(2, errors.New("--ssh is required: the server as user@host[:port]"))
			}
			in := deployer.Install{Binary: dest, StateDir: stateDir, ConfigDir: configDir, UnitDir: unitDir, Units: shippedUnits()}
			if configPath != "" {
				cfg, err := config.Load(configPath)
				if err != nil {
					return exitCode(2, fmt.Errorf("--config: %w; nothing was sent", err))
				}
				in.WatchdogInterval = cfg.Watchdog.Interval
			}
			if err := in.Check(); err != nil {
				return exitCode(2, err)
			}
			if binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				binary = exe
			}
			f, err := os.Open(binary)
			if err != nil {
				return exitCode(2, fmt.Errorf("--binary %s: %w", binary, err))
			}
			defer f.Close()
			// Its size and sha256, which the server checks the upload against before it
			// replaces anything.
			sum := sha256.New()
			n, err := io.Copy(sum, f)
			if err == nil {
				_, err = f.Seek(0, io.SeekStart)
			}
			if err != nil {
				return exitCode(2, fmt.Errorf("--binary %s: reading it: %w", binary, err))
			}
			if n == 0 {
				return exitCode(2, fmt.Errorf("--binary %s is empty: name a zero502 built for the server's OS and CPU; nothing was sent", binary))
			}
			in.Size, in.SHA256 = n, hex.EncodeToString(sum.Sum(nil))
			script, err := in.Script()
			if err != nil {
				return err
			}
			client, err := ssh.Command("", target, script)
			if err != nil {
				return exitCode(2, fmt.Errorf("--ssh %w", err))
			}
			client.Stdin, client.Stdout, client.Stderr = f, cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := client.Run(); err != nil {
				var exit *exec.ExitError
				switch {
				case errors.As(err, &exit) && exit.ExitCode() == deployer.InstallKept:
					err = fmt.Errorf("install on %s failed before replacing anything: %w; the host keeps its previous binary at %s "+
						"and its units: fix the cause in the message above and install again", target, err, dest)
				case errors.As(err, &exit) && exit.ExitCode() == deployer.InstallPartly:
					err = fmt.Errorf("install on %s: %w: the new binary, checked, is at %s, but a later step failed (message above): "+
						"fix it and install again", target, err, dest)
				default:
					err = fmt.Errorf("install on %s: %w (ssh's message above): the host keeps its previous binary at %s unless the new one, "+
						"checked, replaced it whole (look with ssh %s %s version); install again", target, err, dest, target, dest)
				}
				return exitCode(1, err)
			}
			units, next := "zero502-lb, zero502-edge and zero502-mesh", "now the config and the watchdog units (zero502 host install --help)"
			if in.WatchdogInterval != 0 {
				units = "zero502-lb, zero502-edge, zero502-mesh and the watchdog's (its timer every " + in.WatchdogInterval.String() + ")"
				next = "now the config, then systemctl enable --now zero502-watchdog.timer (zero502 host install --help)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s on %s, state dir %s, units %s in %s: %s\n", dest, target, stateDir, units, unitDir, next)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "ssh", "", "the server, user@host[:port] (as in hosts[].ssh)")
	f.StringVar(&binary, "binary", "", "zero502 binary to copy (default: this executable)")
	f.StringVar(&dest, "dest", "/usr/local/bin/zero502", "where the binary goes on the server")
	f.StringVar(&stateDir, "state-dir", "/var/lib/zero502", "the host's state dir (watchdog.state_dir)")
	f.StringVar(&configDir, "config-dir", "/etc/zero502", "where the config and the units' environment files live")
	f.StringVar(&unitDir, "unit-dir", "/etc/systemd/system", "where the systemd units go")
	f.StringVar(&configPath, "config", "", "the config the server's watchdog reads: install the watchdog's units too, its timer every watchdog.interval")
	return cmd
}
