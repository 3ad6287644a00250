#!/usr/bin/env bash
# bench/lb.sh: zero502 lb against HAProxy and nginx on the same backends, on loopback.
#
# Usage (as root; installs haproxy, nginx and wrk with apt-get when missing):
#   bench/lb.sh                       # defaults below
#   DURATION=20s CONNS=128 bench/lb.sh
#   ZERO502_BIN=new/zero502 BEFORE_BIN=old/zero502 bench/lb.sh   # two builds side by side
#   PROXY_THREADS=1 bench/lb.sh       # every proxy on that many threads (default: each its own)
#
# What it does, in one go:
#  1. builds zero502 (and the test backend) from this checkout;
#  2. starts BACKENDS backends: nginx answering a small static "ok" (BACKEND=nginx, default, so
#     the backend is not the bottleneck) or the Go test backend (BACKEND=testbackend);
#  3. runs wrk (-t THREADS -c CONNS -d DURATION --latency) against: one backend directly,
#     `zero502 lb`, HAProxy (http-reuse always) and nginx (upstream keepalive), each on the same
#     backends, ROUNDS times in turn, the order rotated each round (so a noisy neighbour, or a
#     machine whose speed drifts, hurts every target alike), and prints the median req/s, p50 and
#     p99 per target, the ratios zero502/HAProxy and zero502/nginx, and zero502/HAProxy req/s
#     within each round (measured seconds apart, so a drift between rounds cancels out);
#     with CLOSE=1 (default) each round also measures zero502 and HAProxy with a new client
#     connection per request (wrk -H "Connection: close"), reported as zero502-close/haproxy-close;
#  4. with TLS=1 (default) runs zero502 lb (balancer.tls in a config file) and HAProxy (bind ...
#     ssl) with the same ECDSA P-256 certificate, and measures HTTPS keep-alive req/s and, with a
#     new connection per request, TLS handshakes per second (zero502-tls/haproxy-tls,
#     zero502-tls-close/haproxy-tls-close);
#  5. opens IDLE idle keep-alive client connections (each sent one request first) to zero502 lb
#     and to HAProxy and prints the RSS growth per connection in KiB (IDLE=0 skips it).
# Everything listens on 127.0.0.1 and ends when the script ends. Not part of CI: the numbers
# depend on the machine (and on whatever else runs on it), so compare the ratios, not the req/s.
set -euo pipefail
cd "$(dirname "$0")/.."

BACKENDS=${BACKENDS:-3}
BACKEND=${BACKEND:-nginx}
DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
IDLE=${IDLE:-10000}
BASE_PORT=${BASE_PORT:-27100}   # backends BASE_PORT.., LBs BASE_PORT+50..
PATH_UNDER_TEST=${PATH_UNDER_TEST:-/}
CLOSE=${CLOSE:-1}
# PROXY_THREADS=N: zero502 lb --loops N, HAProxy nbthread N, nginx worker_processes N (the same
# number of threads for each); unset, each proxy takes its default (one per CPU for all three).
PROXY_THREADS=${PROXY_THREADS:-}
zloops=()
if [ -n "$PROXY_THREADS" ]; then zloops=(--loops "$PROXY_THREADS"); fi
TLS=${TLS:-1}

export PATH="$PATH:/usr/local/go/bin:/usr/sbin"
need=()
command -v haproxy >/dev/null || need+=(haproxy)
command -v nginx >/dev/null || need+=(nginx)
command -v wrk >/dev/null || need+=(wrk)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  echo "== installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# 10 000 idle clients plus the proxy's own sockets need more descriptors than the usual 1024.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
fdlimit=$(ulimit -n)
# HAProxy reserves two descriptors per connection (client and server side) and refuses to start
# when maxconn does not fit; where the hard limit is low, measure fewer idle connections.
maxconn=$(( (fdlimit - 200) / 2 ))
if [ "$IDLE" -gt $((maxconn - 100)) ]; then
  echo "== the descriptor limit is $fdlimit: measuring $((maxconn - 100)) idle connections instead of $IDLE"
  IDLE=$((maxconn - 100))
fi

work=$(mktemp -d /tmp/zero502-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== building zero502 and the test backend into $work"
if [ -n "${ZERO502_BIN:-}" ]; then # ZERO502_BIN=/path/to/zero502 benchmarks that binary instead
  cp "$ZERO502_BIN" "$work/zero502"
else
  go build -o "$work/zero502" ./cmd/zero502
fi
go build -o "$work/testbackend" ./infra/lb/testbackend

# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s at most).
wait_port() {
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on 127.0.0.1:$1 after 10 s" >&2
  return 1
}

backend_addrs=()
for i in $(seq 0 $((BACKENDS - 1))); do backend_addrs+=("127.0.0.1:$((BASE_PORT + i))"); done

echo "== starting $BACKENDS $BACKEND backends: ${backend_addrs[*]}"
if [ "$BACKEND" = nginx ]; then
  mkdir -p "$work/nginx-backend"
  {
    echo "worker_processes 1; pid $work/nginx-backend/pid; error_log $work/nginx-backend/error.log warn;"
    echo "events { worker_connections 4096; }"
    echo "http { access_log off; keepalive_requests 1000000; keepalive_timeout 75s;"
    for a in "${backend_addrs[@]}"; do
      # shellcheck disable=SC2028 # the \n is for nginx, which turns it into a newline
      echo "  server { listen $a; location / { add_header X-Backend $a; return 200 \"ok\n\"; } }"
    done
    echo "}"
  } >"$work/nginx-backend/nginx.conf"
  nginx -p "$work/nginx-backend" -c "$work/nginx-backend/nginx.conf" -g 'daemon off;' &
  pids+=($!)
else
  for i in "${!backend_addrs[@]}"; do
    "$work/testbackend" --port "${backend_addrs[$i]##*:}" --name "b$i" >/dev/null 2>&1 &
    pids+=($!)
  done
fi
for a in "${backend_addrs[@]}"; do wait_port "${a##*:}"; done

LB_PORT=$((BASE_PORT + 50))
HA_PORT=$((BASE_PORT + 51))
NG_PORT=$((BASE_PORT + 52))

echo "== starting zero502 lb on :$LB_PORT, HAProxy on :$HA_PORT, nginx on :$NG_PORT"
"$work/zero502" lb "$LB_PORT" "${backend_addrs[@]}" "${zloops[@]}" 2>"$work/zero502.log" &
zpid=$!; pids+=("$zpid")
BEFORE_PORT=$((BASE_PORT + 53))
if [ -n "${BEFORE_BIN:-}" ]; then # BEFORE_BIN=/path/to/older/zero502: that build too, side by side
  cp "$BEFORE_BIN" "$work/zero502-before"
  "$work/zero502-before" lb "$BEFORE_PORT" "${backend_addrs[@]}" "${zloops[@]}" 2>"$work/zero502-before.log" &
  bpid=$!; pids+=("$bpid")
fi

{
  echo "global"
  if [ -n "$PROXY_THREADS" ]; then echo "  nbthread $PROXY_THREADS"; fi
  echo "  maxconn $maxconn"
  echo "  ulimit-n $fdlimit"
  echo "defaults"
  echo "  mode http"
  echo "  option http-keep-alive"
  echo "  http-reuse always"
  echo "  timeout connect 1s"
  echo "  timeout client 60s"
  echo "  timeout server 30s"
  echo "  timeout http-keep-alive 60s"
  echo "  timeout http-request 10s"
  echo "  maxconn $maxconn"
  echo "frontend fe"
  echo "  bind 127.0.0.1:$HA_PORT"
  echo "  default_backend be"
  echo "backend be"
  echo "  balance roundrobin"
  echo "  option httpchk GET /health"
  for i in "${!backend_addrs[@]}"; do
    echo "  server s$i ${backend_addrs[$i]} check inter 500ms fall 2 rise 2"
  done
} >"$work/haproxy.cfg"
haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
hpid=$!; pids+=("$hpid")

mkdir -p "$work/nginx-lb"
{
  echo "pid $work/nginx-lb/pid; error_log $work/nginx-lb/error.log warn;"
  echo "worker_processes ${PROXY_THREADS:-auto}; worker_rlimit_nofile $fdlimit;"
  echo "events { worker_connections $maxconn; }"
  echo "http { access_log off; keepalive_requests 1000000; keepalive_timeout 60s;"
  echo "  upstream be { keepalive 128;"
  for a in "${backend_addrs[@]}"; do echo "    server $a;"; done
  echo "  }"
  echo "  server { listen 127.0.0.1:$NG_PORT; location / { proxy_pass http://be; proxy_http_version 1.1;"
  echo "    proxy_set_header Connection \"\"; proxy_set_header Host \$host; } }"
  echo "}"
} >"$work/nginx-lb/nginx.conf"
nginx -p "$work/nginx-lb" -c "$work/nginx-lb/nginx.conf" -g 'daemon off;' &
pids+=($!)

ZT_PORT=$((BASE_PORT + 54)) # zero502 lb with TLS (its plain listener BASE_PORT+55)
HT_PORT=$((BASE_PORT + 56)) # HAProxy with TLS
if [ "$TLS" = 1 ]; then
  echo "== starting zero502 lb with TLS on :$ZT_PORT, HAProxy with TLS on :$HT_PORT (ECDSA P-256)"
  mkdir -p "$work/tls"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=bench.test \
    -addext subjectAltName=DNS:bench.test -keyout "$work/tls/key.pem" -out "$work/tls/cert.pem" 2>/dev/null
  chmod 600 "$work/tls/key.pem"
  cat "$work/tls/cert.pem" "$work/tls/key.pem" >"$work/tls/haproxy.pem"
  chmod 600 "$work/tls/haproxy.pem"
  {
    echo "balancer:"
    echo "  listen: 127.0.0.1:$((BASE_PORT + 55))"
    echo "  admin: 127.0.0.1:$((BASE_PORT + 57))"
    echo "  service: web"
    echo "  interval: 500ms"
    echo "  timeout: 400ms"
    echo "  tls:"
    echo "    listen: 127.0.0.1:$ZT_PORT"
    echo "    certificates: [{cert: $work/tls/cert.pem, key: $work/tls/key.pem}]"
    echo "rollout: {runtime: process}"
    echo "services: [{name: web, command: [\"true\"], port: $BASE_PORT}]"
    echo "hosts:"
    for i in "${!backend_addrs[@]}"; do echo "  - {name: b$i, port_offset: $i}"; done
  } >"$work/tls/zero502.yaml"
  "$work/zero502" lb --config "$work/tls/zero502.yaml" 2>"$work/zero502-tls.log" &
  ztpid=$!; pids+=("$ztpid")
  sed -e "s|bind 127.0.0.1:$HA_PORT|bind 127.0.0.1:$HT_PORT ssl crt $work/tls/haproxy.pem alpn http/1.1|" "$work/haproxy.cfg" >"$work/haproxy-tls.cfg"
  haproxy -db -f "$work/haproxy-tls.cfg" >"$work/haproxy-tls.log" 2>&1 &
  htpid=$!; pids+=("$htpid")
  wait_port "$ZT_PORT"; wait_port "$HT_PORT"
fi

for p in "$LB_PORT" "$HA_PORT" "$NG_PORT"; do wait_port "$p"; done
if [ -n "${BEFORE_BIN:-}" ]; then wait_port "$BEFORE_PORT"; fi
sleep 1 # let every balancer see its backends healthy

# to_ms converts wrk's latency notation (812.00us, 1.23ms, 1.02s) to milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}
# cpu_ticks PID: the user+system CPU time the process has used, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK=$(getconf CLK_TCK)
# run_wrk NAME PORT PID [WRK ARGS...]: a 2 s warm-up, then the measured run; appends
# "NAME req/s p50 p99 cpu round" to results, cpu being the CPU microseconds process PID spent per
# request (-1 with PID "-"). CPU per request is what a proxy costs whatever it shares the cores
# with; req/s on a machine where wrk and the backends share the proxy's cores dilutes it.
run_wrk() {
  local name=$1 port=$2 pid=$3 url="${SCHEME:-http}://127.0.0.1:$2$PATH_UNDER_TEST" out rps p50 p99 reqs t0=0 t1=0 cpu=-1
  shift 3
  echo "== $name: wrk -t$THREADS -c$CONNS -d$DURATION --latency $* $url"
  wrk -t"$THREADS" -c"$CONNS" -d2s "$@" "$url" >/dev/null
  [ "$pid" != - ] && t0=$(cpu_ticks "$pid")
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency "$@" "$url")
  echo "$out" | grep -E 'Requests/sec|Non-2xx|Socket errors| 50%| 99%' | sed 's/^/   /'
  if echo "$out" | grep -q 'Non-2xx'; then echo "   WARNING: $name answered non-2xx responses" >&2; fi
  rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
  p50=$(to_ms "$(echo "$out" | awk '$1 == "50%" { print $2 }')")
  p99=$(to_ms "$(echo "$out" | awk '$1 == "99%" { print $2 }')")
  reqs=$(echo "$out" | awk '/requests in/ { print $1 }')
  if [ "$pid" != - ]; then
    t1=$(cpu_ticks "$pid")
    cpu=$(awk -v d=$((t1 - t0)) -v r="$reqs" -v hz="$TICK" 'BEGIN { printf "%.1f", (r > 0 ? d * 1e6 / hz / r : -1) }')
    echo "   $cpu µs CPU per request"
  fi
  echo "$name $rps $p50 $p99 $cpu $round" >>"$work/results"
}

: >"$work/results"
round=0
run_wrk direct "${backend_addrs[0]##*:}" -
# run_target NAME: one measured run of the target NAME.
run_target() {
  case $1 in
  zero502) run_wrk zero502 "$LB_PORT" "$zpid" ;;
  haproxy) run_wrk haproxy "$HA_PORT" "$hpid" ;;
  nginx) run_wrk nginx "$NG_PORT" - ;; # a master and its workers: CPU not measured
  before) run_wrk before "$BEFORE_PORT" "$bpid" ;;
  zero502-close) run_wrk zero502-close "$LB_PORT" "$zpid" -H "Connection: close" ;;
  haproxy-close) run_wrk haproxy-close "$HA_PORT" "$hpid" -H "Connection: close" ;;
  before-close) run_wrk before-close "$BEFORE_PORT" "$bpid" -H "Connection: close" ;;
  zero502-tls) SCHEME=https run_wrk zero502-tls "$ZT_PORT" "$ztpid" ;;
  haproxy-tls) SCHEME=https run_wrk haproxy-tls "$HT_PORT" "$htpid" ;;
  zero502-tls-close) SCHEME=https run_wrk zero502-tls-close "$ZT_PORT" "$ztpid" -H "Connection: close" ;;
  haproxy-tls-close) SCHEME=https run_wrk haproxy-tls-close "$HT_PORT" "$htpid" -H "Connection: close" ;;
  esac
}
# run_rotated ROUND TARGET...: each target once, the list rotated by ROUND, so that no target
# always runs first (or right after the same neighbour) while the machine's speed drifts.
run_rotated() {
  local r=$1 k i
  shift
  k=$#
  local targets=("$@")
  for ((i = 0; i < k; i++)); do run_target "${targets[$(((i + r) % k))]}"; done
}
keepalive=(zero502 haproxy nginx)
close=(zero502-close haproxy-close)
if [ -n "${BEFORE_BIN:-}" ]; then keepalive+=(before); close+=(before-close); fi
for round in $(seq "$ROUNDS"); do
  echo "== round $round of $ROUNDS"
  run_rotated "$round" "${keepalive[@]}"
  if [ "$CLOSE" = 1 ]; then run_rotated "$round" "${close[@]}"; fi
  if [ "$TLS" = 1 ]; then
    run_rotated "$round" zero502-tls haproxy-tls
    run_rotated "$round" zero502-tls-close haproxy-tls-close
  fi
done

# idle_kib NAME PID PORT: RSS growth of PID per idle keep-alive client connection, for IDLE
# connections that each sent one request and then stay open and silent.
cat >"$work/idle.py" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
req = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n"
conns = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("connection closed before the response headers")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(body) < length:
        body += s.recv(4096)
    conns.append(s)
print("open", flush=True)
sys.stdin.read()
PY
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
idle_kib() {
  local name=$1 pid=$2 port=$3 before after fifo="$work/idle-$1.fifo"
  for _ in $(seq 20); do (exec 3<>"/dev/tcp/127.0.0.1/$port"; printf 'GET / HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n' >&3; cat <&3 >/dev/null); done
  sleep 1
  before=$(rss_kib "$pid")
  mkfifo "$fifo"
  python3 "$work/idle.py" "$port" "$IDLE" <"$fifo" >"$work/idle-$name.out" &
  local ppid=$!
  exec 4>"$fifo" # keeps the client's stdin open: it holds its connections until we close it
  for _ in $(seq 600); do grep -q open "$work/idle-$name.out" 2>/dev/null && break; sleep 0.1; done
  if ! grep -q open "$work/idle-$name.out"; then echo "   $name: the idle client did not open $IDLE connections" >&2; fi
  sleep 1
  after=$(rss_kib "$pid")
  exec 4>&-
  wait "$ppid" 2>/dev/null || true
  awk -v n="$name" -v b="$before" -v a="$after" -v c="$IDLE" \
    'BEGIN { printf "%s RSS %d KiB -> %d KiB for %d idle connections: %.2f KiB/conn\n", n, b, a, c, (a - b) / c }' \
    | tee -a "$work/idle"
}

: >"$work/idle"
if [ "$IDLE" -gt 0 ]; then # IDLE=0 skips it
  echo "== idle keep-alive connections: fresh zero502 lb and HAProxy, $IDLE clients each"
  kill "$zpid" "$hpid" 2>/dev/null || true
  "$work/zero502" lb "$LB_PORT" "${backend_addrs[@]}" "${zloops[@]}" 2>>"$work/zero502.log" &
  zpid=$!; pids+=("$zpid")
  haproxy -db -f "$work/haproxy.cfg" >>"$work/haproxy.log" 2>&1 &
  hpid=$!; pids+=("$hpid")
  wait_port "$LB_PORT"; wait_port "$HA_PORT"; sleep 1
  idle_kib zero502 "$zpid" "$LB_PORT"
  idle_kib haproxy "$hpid" "$HA_PORT"
fi

echo
echo "== results ($BACKENDS $BACKEND backends, wrk -t$THREADS -c$CONNS -d$DURATION, $ROUNDS rounds, $(nproc) CPUs, proxy threads: ${PROXY_THREADS:-default})"
awk '
  function median(v, n,    i, j, t) { # sorts v[1..n] in place
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
    return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
  }
  { byRound[$1, $6] = $2; if ($6 > rounds) rounds = $6 }
  { n[$1]++; R[$1, n[$1]] = $2; P50[$1, n[$1]] = $3; P99[$1, n[$1]] = $4; C[$1, n[$1]] = $5; }
  END {
    targets = split("direct zero502 haproxy nginx before zero502-close haproxy-close before-close zero502-tls haproxy-tls zero502-tls-close haproxy-tls-close", all)
    for (t = 1; t <= targets; t++) if (n[all[t]] > 0) order[++shown] = all[t]
    targets = shown
    for (t = 1; t <= targets; t++) {
      name = order[t]; k = n[name]
      split("", a); for (i = 1; i <= k; i++) a[i] = R[name, i]; rps[name] = median(a, k)
      split("", a); for (i = 1; i <= k; i++) a[i] = P50[name, i]; p50[name] = median(a, k)
      split("", a); for (i = 1; i <= k; i++) a[i] = P99[name, i]; p99[name] = median(a, k)
      split("", a); for (i = 1; i <= k; i++) a[i] = C[name, i]; cpu[name] = median(a, k)
    }
    printf "%-18s %10s %10s %10s %12s   (medians of the rounds)\n", "target", "req/s", "p50 ms", "p99 ms", "CPU µs/req"
    for (t = 1; t <= targets; t++) {
      name = order[t]
      printf "%-18s %10.0f %10.3f %10.3f %12s\n", name, rps[name], p50[name], p99[name], (cpu[name] > 0 ? sprintf("%.1f", cpu[name]) : "-")
    }
    printf "\nzero502/haproxy: req/s %.2fx, p99 %.2fx, CPU per request %.2fx (goal: req/s >= 1.3x, p99 <= 1.0x)\n", rps["zero502"] / rps["haproxy"], p99["zero502"] / p99["haproxy"], cpu["zero502"] / cpu["haproxy"]
    line = ""; lo = 0; split("", a)
    for (r = 1; r <= rounds; r++) {
      q = byRound["zero502", r] / byRound["haproxy", r]; a[r] = q
      line = line sprintf(" %.2f", q); if (lo == 0 || q < lo) lo = q
    }
    printf "zero502/haproxy req/s round by round:%s (median %.2fx, lowest %.2fx)\n", line, median(a, rounds), lo
    printf "zero502/nginx:   req/s %.2fx, p99 %.2fx\n", rps["zero502"] / rps["nginx"], p99["zero502"] / p99["nginx"]
    if (rps["haproxy-close"] > 0)
      printf "new connection per request, zero502/haproxy: req/s %.2fx, p99 %.2fx, CPU per request %.2fx (goal: req/s >= 1.0x)\n", rps["zero502-close"] / rps["haproxy-close"], p99["zero502-close"] / p99["haproxy-close"], cpu["zero502-close"] / cpu["haproxy-close"]
    if (rps["haproxy-tls"] > 0)
      printf "HTTPS keep-alive, zero502/haproxy: req/s %.2fx, p99 %.2fx, CPU per request %.2fx\n", rps["zero502-tls"] / rps["haproxy-tls"], p99["zero502-tls"] / p99["haproxy-tls"], cpu["zero502-tls"] / cpu["haproxy-tls"]
    if (rps["haproxy-tls-close"] > 0)
      printf "HTTPS, a TLS handshake per request, zero502/haproxy: handshakes/s %.2fx, p99 %.2fx, CPU per handshake %.2fx\n", rps["zero502-tls-close"] / rps["haproxy-tls-close"], p99["zero502-tls-close"] / p99["haproxy-tls-close"], cpu["zero502-tls-close"] / cpu["haproxy-tls-close"]
    if (rps["before"] > 0)
      printf "zero502/before: req/s %.2fx, p99 %.2fx, CPU per request %.2fx\n", rps["zero502"] / rps["before"], p99["zero502"] / p99["before"], cpu["zero502"] / cpu["before"]
    if (rps["before-close"] > 0)
      printf "new connection per request, zero502/before: req/s %.2fx, p99 %.2fx, CPU per request %.2fx\n", rps["zero502-close"] / rps["before-close"], p99["zero502-close"] / p99["before-close"], cpu["zero502-close"] / cpu["before-close"]
  }' "$work/results"
cat "$work/idle"
