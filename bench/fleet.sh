#!/usr/bin/env bash
# bench/fleet.sh: a rolling deploy across a fleet of HOSTS hosts on a real network (each its own
# network namespace, address and sshd: internal/testrig/netfleet), in batches of BATCH, under a
# steady load through the in-house LB. Prints the deploy time against its floor, the time of
# `zero502 status` over the whole fleet and the failed requests. Removes the fleet on exit.
#
#   bench/fleet.sh                          # as root: 50 hosts, batches of 10, 200 req/s
#   HOSTS=20 BATCH=5 RATE=100 bench/fleet.sh
#   PARALLEL=10 bench/fleet.sh              # zero502's --parallel (default: the deployer's own)
#   ZERO502_BIN=/path/to/zero502 bench/fleet.sh   # a given binary instead of building one
#   KEEP=1 bench/fleet.sh                   # keep the work dir (configs, reports, logs)
set -euo pipefail
cd "$(dirname "$0")/.."

HOSTS=${HOSTS:-50}
BATCH=${BATCH:-10}
RATE=${RATE:-200}
KEEP=${KEEP:-0}
PARALLEL=${PARALLEL:-}
par=()
[ -z "$PARALLEL" ] || par=(--parallel "$PARALLEL")

die() { echo "bench/fleet.sh: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, veths, sshd)"
export PATH="$PATH:/usr/sbin:/sbin"
for tool in ip iptables ssh ssh-keygen jq curl go; do
  command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install iproute2 iptables openssh-client openssh-server jq curl)"
done
[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd is not installed (apt-get install openssh-server)"
[ "$BATCH" -lt "$HOSTS" ] || die "BATCH=$BATCH must be below HOSTS=$HOSTS (invariant I8: a batch leaves a healthy host)"

work=$(mktemp -d /tmp/zero502-fleet-bench.XXXXXX)
fleet_pid="" lb_pid="" load_pid=""
cleanup() {
  for pid in "$load_pid" "$lb_pid"; do
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  if [ -n "$fleet_pid" ]; then
    kill "$fleet_pid" 2>/dev/null && wait "$fleet_pid" 2>/dev/null
  fi
  [ -x "$work/netfleet" ] && "$work/netfleet" sweep
  if [ "$KEEP" = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s%N; }
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; } # the machine's busy clock ticks
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }                 # a process's user + system ticks
secs() { awk -v ns="$1" 'BEGIN { printf "%.2fs", ns / 1e9 }'; }

echo "== build"
bin=${ZERO502_BIN:-$work/zero502}
[ -n "${ZERO502_BIN:-}" ] || CGO_ENABLED=0 go build -trimpath -o "$bin" ./cmd/zero502
go build -o "$work/netfleet" ./internal/testrig/netfleet/cmd/netfleet

# What one process start costs this machine (exec, page faults, package init): preflight and each
# batch start one zero502 per host, and on this bench every host shares the machine's cores.
start_cpu_ms() { # start_cpu_ms N: CPU milliseconds per `zero502 version`, over N runs
  local b0 b1
  b0=$(busy_ticks)
  for _ in $(seq "$1"); do "$bin" version >/dev/null; done
  b1=$(busy_ticks)
  awk -v t=$((b1 - b0)) -v hz="$(getconf CLK_TCK)" -v n="$1" 'BEGIN { printf "%.0f", t / hz * 1000 / n }'
}
start_ms=$(start_cpu_ms 40)

echo "== fleet: $HOSTS hosts"
t0=$(now)
"$work/netfleet" up -hosts "$HOSTS" -dir "$work/fleet" >"$work/netfleet.log" 2>&1 &
fleet_pid=$!
until [ -s "$work/fleet/fleet.json" ]; do
  kill -0 "$fleet_pid" 2>/dev/null || { cat "$work/netfleet.log" >&2; die "the fleet was not built"; }
  sleep 0.2
done
built=$(($(now) - t0))
gw=$(jq -r .gateway "$work/fleet/fleet.json")
subnet=$(jq -r .subnet "$work/fleet/fleet.json")
ZERO502_SSH_OPTS=$(jq -r .ssh_opts "$work/fleet/fleet.json")
export ZERO502_SSH_OPTS
token=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n') # the LB's admin API is off loopback: the hosts' steps use it

# The config: the in-house LB here at the fleet's gateway, examples/local.yaml's fast numbers,
# the zero502 app on {address}:8000 of every host, reached over ssh.
config() { # config BATCH FILE (0600: it holds the LB's admin token)
  (umask 077 && : >"$2")
  cat >"$2" <<EOF
balancer:
  kind: inhouse
  listen: $gw:18080
  admin: $gw:18081
  admin_token: $token
  service: web
  interval: 250ms
  timeout: 200ms
  unhealthy_threshold: 2
  healthy_threshold: 2
  idle_timeout: 5s
  connect_timeout: 1s
  header_timeout: 3s
drain: {window: 1500ms, shutdown: 1s, stop_grace: 4s, max_recovery: 2s}
watchdog: {interval: 1s, heal_after: 4, check_timeout: 500ms, state_dir: $work/hosts}
app: {keepalive_idle_timeout: 10s}
rollout:
  batch: $1
  runtime: process
  healthy_deadline: 30s
  analysis: {enabled: false}
services:
  - name: web
    command: ["{self}", "app", "--version", "{version}", "--port", "{port}", "--host", "{address}", "--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"]
    port: 8000
    verify: {version_header: X-Version}
hosts:
EOF
  jq -r --arg dir "$work/hosts" '.hosts[] | "  - {name: \(.name), ssh: \(.ssh), address: \(.address), state_dir: \($dir)/\(.name)}"' \
    "$work/fleet/fleet.json" >>"$2"
}
mkdir -p "$work/hosts"
config "$BATCH" "$work/fleet.yaml"

echo "== lb"
"$bin" lb --config "$work/fleet.yaml" >"$work/lb.log" 2>&1 &
lb_pid=$!
for _ in $(seq 100); do
  curl -fsS -H "Authorization: Bearer $token" "http://$gw:18081/admin/health" >/dev/null 2>&1 && break
  kill -0 "$lb_pid" 2>/dev/null || { cat "$work/lb.log" >&2; die "zero502 lb exited"; }
  sleep 0.1
done

deploy() { # deploy VERSION CONFIG: runs it, its JSON in $work/deploy-VERSION.jsonl; prints the report's line
  local code=0
  "$bin" deploy --config "$2" --version "$1" --remote-binary "$bin" "${par[@]}" --json >"$work/deploy-$1.jsonl" 2>"$work/deploy-$1.err" || code=$?
  tail -n 1 "$work/deploy-$1.jsonl" | jq -r --arg code "$code" --arg v "$1" \
    '.report | "\(.duration_ns) \(.floor_ns // 0) \($code) \([.hosts[] | select(.running == $v)] | length)"'
}

outcomes() { # outcomes VERSION: the report's outcomes, counted
  tail -n 1 "$work/deploy-$1.jsonl" | jq -r '[.report.hosts[].outcome] | group_by(.) | map("\(.[0]) \(length)") | join(", ")'
}

echo "== first deploy v1, batches of $BATCH"
read -r v1_took _ v1_code v1_on < <(deploy v1 "$work/fleet.yaml")
if [ "$v1_code" != 0 ]; then
  echo "the first deploy failed (exit $v1_code) after $(secs "$v1_took"): $(outcomes v1)" >&2
  tail -n 5 "$work/deploy-v1.err" >&2
  die "the first deploy failed: nothing to measure (with --parallel ${PARALLEL:-default}; try another PARALLEL)"
fi

echo "== deploy v2, batches of $BATCH, under $RATE req/s"
"$bin" measure "http://$gw:18080" --rate "$RATE" --duration 0 --json >"$work/load.json" 2>"$work/load.err" &
load_pid=$!
sleep 2
t0=$(now)
cpu0=$(busy_ticks) lb0=$(proc_ticks "$lb_pid")
read -r v2_took v2_floor v2_code v2_on < <(deploy v2 "$work/fleet.yaml")
v2_wall=$(($(now) - t0))
cpu1=$(busy_ticks) lb1=$(proc_ticks "$lb_pid")
sleep 2
kill -INT "$load_pid"
wait "$load_pid" || true
load_pid=""

# Where the deploy's time went, from its events: preflight (to its last check), the batches' own
# steps (each from its first host's lock to its last host's done), and the rest (the re-verify of
# the hosts done before each batch and at the end, the read-back).
# Of the batches' steps, the new instances' own boot: per batch, the slowest host's time from its
# new instance's start to its first healthy answer (the service's start, not the deployer's work).
read -r pre_ms steps_ms batches boot_ms < <(jq -rs --argjson b "$BATCH" '
  (map(select(.step == "preflight" and (.message // "" | startswith("invariants hold")))) | .[0].elapsed_ms // 0) as $pre
  | (.[-1].report) as $rep
  | [$rep.hosts[].host] as $hosts
  | def at(step; f): map(select(.host and .step == step)) | group_by(.host) | map({key: .[0].host, value: (map(.elapsed_ms) | f)}) | from_entries;
  at("locked"; min) as $lock | at("done"; max) as $done | at("start"; max) as $start | at("healthy"; max) as $healthy
  | [range(0; $hosts | length; $b) as $i | $hosts[$i:$i + $b] | select(all(.[]; $lock[.] and $done[.]))
     | {s: (map($lock[.]) | min), e: (map($done[.]) | max),
        boot: (map(select($start[.] and $healthy[.]) | $healthy[.] - $start[.]) | max // 0)}] as $batches
  | "\($pre) \($batches | map(.e - .s) | add // 0) \($batches | length) \($batches | map(.boot) | add // 0)"' "$work/deploy-v2.jsonl")

echo "== status"
t0=$(now)
status_code=0
"$bin" status --config "$work/fleet.yaml" --remote-binary "$bin" "${par[@]}" >"$work/status.txt" 2>&1 || status_code=$?
status_took=$(($(now) - t0))

sent=$(jq -r .sent "$work/load.json")
failed=$(jq -r .failures "$work/load.json")
classes=$(jq -r '[.counts | to_entries[] | select(.value > 0 and .key != "ok" and .key != "health_503") | "\(.key) \(.value)"] | join(", ")' "$work/load.json")

echo
echo "fleet: $HOSTS hosts on $subnet (a network namespace, address and sshd each), built in $(secs "$built"); --parallel ${PARALLEL:-default}"
echo "first deploy v1 (batches of $BATCH, nothing to drain): $(secs "$v1_took"), $v1_on of $HOSTS hosts on v1"
ratio=$(awk -v a="$v2_took" -v b="$v2_floor" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
echo "the deploy: v2 in batches of $BATCH: $(secs "$v2_took") against its floor $(secs "$v2_floor") (${ratio}x); exit $v2_code, $v2_on of $HOSTS hosts on v2: $(outcomes v2) (wall $(secs "$v2_wall"))"
rest_ms=$((v2_took / 1000000 - pre_ms - steps_ms))
echo "  of it: preflight $(secs $((pre_ms * 1000000))), the $batches batches' own steps $(secs $((steps_ms * 1000000))) (of which the new instances' boot, start to healthy, slowest host per batch: $(secs $((boot_ms * 1000000)))), between and after them (re-verify, read-back) $(secs $((rest_ms * 1000000)))"
hz=$(getconf CLK_TCK)
echo "  CPU during it: the machine $(awk -v t=$((cpu1 - cpu0)) -v hz="$hz" -v ns="$v2_wall" 'BEGIN { printf "%.2f of %d cores", t / hz / (ns / 1e9), '"$(nproc)"' }'), the LB $(awk -v t=$((lb1 - lb0)) -v hz="$hz" 'BEGIN { printf "%.2fs", t / hz }')"
echo "  the machine: one zero502 start costs ${start_ms} ms of CPU (\`zero502 version\`, 40 runs)"
echo "zero502 status of $HOSTS hosts: $(secs "$status_took") (exit $status_code)"
echo "failed requests: $failed of $sent at $RATE req/s through the LB during the deploy${classes:+ ($classes)}"
[ "$v2_code" = 0 ] || { echo "the deploy failed:"; tail -n 20 "$work/deploy-v2.err"; }
