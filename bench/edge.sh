#!/usr/bin/env bash
# bench/edge.sh: `zero502 edge forward` against HAProxy (mode tcp, send-proxy-v2), on loopback.
#
# Usage (as root; installs haproxy, nginx and wrk with apt-get when missing):
#   bench/edge.sh
#   DURATION=10s CONNS=64 ROUNDS=3 bench/edge.sh
#   BEFORE_BIN=/path/to/old/zero502 bench/edge.sh   # also run an older build, side by side
#
# The origin is nginx reading the PROXY v2 header (`listen ... proxy_protocol`) and answering a
# 3-byte "ok". wrk runs against: nginx directly (a listener without proxy_protocol), zero502 edge
# forward, and HAProxy in mode tcp with send-proxy-v2, each ROUNDS times in turn (the order
# rotated each round), twice: with keep-alive (the forwarders copy bytes on long connections)
# and with `Connection: close` (a new TCP connection, a dial to the origin and a header per
# request). It prints the median req/s and
# p99 per target and the ratios zero502/HAProxy. With BEFORE_BIN, a second edge runs that binary
# in the same rounds (target "before"), and the ratios zero502/before show what a change bought.
# Not part of CI: compare the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-5s}
THREADS=${THREADS:-2}
CONNS=${CONNS:-64}
ROUNDS=${ROUNDS:-3}
BASE_PORT=${BASE_PORT:-27300}

export PATH="$PATH:/usr/local/go/bin:/usr/sbin"
need=()
command -v haproxy >/dev/null || need+=(haproxy)
command -v nginx >/dev/null || need+=(nginx)
command -v wrk >/dev/null || need+=(wrk)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
# HAProxy reserves two descriptors per connection and refuses to start when maxconn does not fit
maxconn=$(( ($(ulimit -n) - 200) / 2 ))

work=$(mktemp -d /tmp/zero502-edge-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ORIGIN_PP=$((BASE_PORT))     # nginx, PROXY protocol required
ORIGIN_PLAIN=$((BASE_PORT + 1)) # nginx, no PROXY protocol: the direct baseline
EDGE_PORT=$((BASE_PORT + 10))
HA_PORT=$((BASE_PORT + 11))
BEFORE_PORT=$((BASE_PORT + 12))

echo "== building zero502 into $work"
if [ -n "${ZERO502_BIN:-}" ]; then cp "$ZERO502_BIN" "$work/zero502"; else go build -o "$work/zero502" ./cmd/zero502; fi

wait_port() {
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on 127.0.0.1:$1 after 10 s" >&2
  return 1
}

mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1; pid $work/nginx/pid; error_log $work/nginx/error.log warn;
events { worker_connections 8192; }
http { access_log off; keepalive_requests 1000000; keepalive_timeout 75s;
  server { listen 127.0.0.1:$ORIGIN_PP proxy_protocol; location / { return 200 "ok\n"; } }
  server { listen 127.0.0.1:$ORIGIN_PLAIN; location / { return 200 "ok\n"; } }
}
EOF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
pids+=($!)

"$work/zero502" edge forward --listen "127.0.0.1:$EDGE_PORT" --origin "127.0.0.1:$ORIGIN_PP" --drain 0s 2>"$work/edge.log" &
pids+=($!)
EDGE_PID=$!

ports=("$ORIGIN_PP" "$ORIGIN_PLAIN" "$EDGE_PORT" "$HA_PORT")
if [ -n "${BEFORE_BIN:-}" ]; then
  cp "$BEFORE_BIN" "$work/zero502-before"
  "$work/zero502-before" edge forward --listen "127.0.0.1:$BEFORE_PORT" --origin "127.0.0.1:$ORIGIN_PP" --drain 0s 2>"$work/edge-before.log" &
  pids+=($!)
  BEFORE_PID=$!
  ports+=("$BEFORE_PORT")
fi

cat >"$work/haproxy.cfg" <<EOF
global
  maxconn $maxconn
defaults
  mode tcp
  timeout connect 3s
  timeout client 5m
  timeout server 5m
frontend fe
  bind 127.0.0.1:$HA_PORT
  default_backend be
backend be
  server origin 127.0.0.1:$ORIGIN_PP send-proxy-v2
EOF
haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
pids+=($!)
HA_PID=$!

for p in "${ports[@]}"; do wait_port "$p"; done

to_ms() {
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}
# cpu_ticks PID: the user+system CPU time the process has used, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
# run_wrk MODE NAME PORT PID [wrk args...]: appends "MODE NAME req/s p99 cpu" to results, cpu
# being the CPU microseconds process PID spent per request (-1 without a PID). CPU per request
# is the number a noisy neighbour disturbs least: it does not count time spent waiting for a core.
run_wrk() {
  local mode=$1 name=$2 port=$3 pid=$4 out rps p99 reqs t0=0 t1=0 cpu=-1
  shift 4
  [ -n "$pid" ] && t0=$(cpu_ticks "$pid")
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$@" "http://127.0.0.1:$port/")
  if echo "$out" | grep -qE 'Non-2xx|Socket errors: connect [1-9]|read [1-9]'; then
    echo "   WARNING: $mode $name: $(echo "$out" | grep -E 'Non-2xx|Socket errors')" >&2
  fi
  rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
  p99=$(to_ms "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
  reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
  if [ -n "$pid" ]; then
    t1=$(cpu_ticks "$pid")
    cpu=$(awk -v d=$((t1 - t0)) -v r="$reqs" -v hz="$TICK" 'BEGIN { printf "%.1f", (r > 0 ? d * 1e6 / hz / r : -1) }')
  fi
  echo "   $mode $name: $rps req/s, p99 $p99 ms, $( [ "$cpu" = -1 ] && echo "CPU not measured" || echo "$cpu µs CPU per request")"
  echo "$mode $name $rps $p99 $cpu" >>"$work/results"
}

: >"$work/results"
targets=(zero502 haproxy)
if [ -n "${BEFORE_BIN:-}" ]; then targets+=(before); fi
for mode in keepalive close; do
  args=()
  [ "$mode" = close ] && args=(-H "Connection: close")
  echo "== $mode: wrk -t$THREADS -c$CONNS -d$DURATION ${args[*]}"
  for p in "${ports[@]:2}"; do wrk -t"$THREADS" -c"$CONNS" -d1s "${args[@]}" "http://127.0.0.1:$p/" >/dev/null; done # warm-up
  run_wrk "$mode" direct "$ORIGIN_PLAIN" "" "${args[@]}"
  # the order rotates each round, so that no target always runs first while the machine drifts
  for round in $(seq "$ROUNDS"); do
    for ((i = 0; i < ${#targets[@]}; i++)); do
      case ${targets[$(((i + round) % ${#targets[@]}))]} in
      zero502) run_wrk "$mode" zero502 "$EDGE_PORT" "$EDGE_PID" "${args[@]}" ;;
      haproxy) run_wrk "$mode" haproxy "$HA_PORT" "$HA_PID" "${args[@]}" ;;
      before) run_wrk "$mode" before "$BEFORE_PORT" "$BEFORE_PID" "${args[@]}" ;;
      esac
    done
  done
done

echo
echo "== results (wrk -t$THREADS -c$CONNS -d$DURATION, $ROUNDS rounds, medians, $(nproc) CPUs)"
awk '
  function median(v, n,    i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
    return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
  }
  # ratio A B: "zero502/haproxy req/s 1.05x, p99 0.98x, CPU per request 0.91x" for one mode
  function ratio(mode, a, b) {
    printf "%s: %s/%s req/s %.2fx, p99 %.2fx", mode == "keepalive" ? "keep-alive" : "new connection per request", a, b,
      rps[mode " " a] / rps[mode " " b], p99[mode " " a] / p99[mode " " b]
    if (cpu[mode " " a] > 0 && cpu[mode " " b] > 0) printf ", CPU per request %.2fx", cpu[mode " " a] / cpu[mode " " b]
    printf "\n"
  }
  { k = $1 " " $2; n[k]++; R[k, n[k]] = $3; P[k, n[k]] = $4; C[k, n[k]] = $5 }
  END {
    split("direct zero502 haproxy before", all)
    for (md = 1; md <= 2; md++) for (t = 1; t <= 4; t++) {
      k = (md == 1 ? "keepalive" : "close") " " all[t]
      if (n[k] > 0) order[++m] = k
    }
    printf "%-20s %12s %10s %14s\n", "mode target", "req/s", "p99 ms", "CPU µs/req"
    for (t = 1; t <= m; t++) {
      k = order[t]; c = n[k]
      split("", a); for (i = 1; i <= c; i++) a[i] = R[k, i]; rps[k] = median(a, c)
      split("", a); for (i = 1; i <= c; i++) a[i] = P[k, i]; p99[k] = median(a, c)
      split("", a); for (i = 1; i <= c; i++) a[i] = C[k, i]; cpu[k] = median(a, c)
      printf "%-20s %12.0f %10.3f %14s\n", k, rps[k], p99[k], (cpu[k] > 0 ? sprintf("%.1f", cpu[k]) : "-")
    }
    printf "\n"
    ratio("keepalive", "zero502", "haproxy")
    ratio("close", "zero502", "haproxy")
    if (("keepalive before") in rps) {
      ratio("keepalive", "zero502", "before")
      ratio("close", "zero502", "before")
      ratio("keepalive", "before", "haproxy")
      ratio("close", "before", "haproxy")
    }
  }' "$work/results"
