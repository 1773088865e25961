#!/usr/bin/env bash
# make loadtest: /v1/invoke with the echo pack beside the plain echo handler
# in the same server (bin/loadtest), at concurrency 1 and 32, with their
# ratio; then RSS after the first 10,000 and after 100,000 pooled calls at
# concurrency 32. Installs wrk (Debian) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
ADDR=${LOADTEST_ADDR:-127.0.0.1:8090}
DURATION=${LOADTEST_DURATION:-4s}
ROUNDS=${LOADTEST_ROUNDS:-5}
tmp=$(mktemp -d)

if ! command -v wrk >/dev/null; then
  echo "installing wrk (Debian package)"
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
  elif command -v sudo >/dev/null; then sudo apt-get install -y -qq wrk >/dev/null
  fi
  command -v wrk >/dev/null || { echo "loadtest: wrk is not installed and could not be (apt-get install wrk)" >&2; exit 2; }
fi

pid=
stop() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; pid=; }
trap 'stop; rm -rf "$tmp"' EXIT
serve() {
  bin/loadtest -addr "$ADDR" "$@" 2>/dev/null & pid=$!
  for _ in $(seq 100); do
    curl -sf "http://$ADDR/healthz" >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "loadtest: the server did not start" >&2; exit 2
}

# wrk's requests/s, p50 and p99 (ms) and non-2xx count for one path, then
# the server's own p50 and p99 for it (ms, from handler in to answer out).
measure() { # concurrency path
  local threads=2; [ "$1" = 1 ] && threads=1
  curl -s "http://$ADDR/bench/latency" >/dev/null
  wrk -t "$threads" -c "$1" -d "$DURATION" --latency -s cmd/loadtest/post.lua "http://$ADDR$2" | awk '
    function ms(v) { if (v ~ /us$/) return v/1000; if (v ~ /ms$/) return v+0; if (v ~ /s$/) return v*1000; return v }
    /Requests\/sec/ { rps = $2 } / 50%/ { p50 = ms($2) } / 99%/ { p99 = ms($2) } /Non-2xx/ { bad = $NF }
    END { printf "%.0f %.3f %.3f %d ", rps, p50, p99, bad }'
  curl -s "http://$ADDR/bench/latency" | sed -n "s|.*\"$2\":\[\([0-9.e+-]*\),\([0-9.e+-]*\)\].*|\1 \2|p"
}

serve
# Each concurrency: ROUNDS rounds, each /v1/invoke then plain for DURATION;
# the medians of the rounds, so that a machine whose speed drifts (a shared
# VM) weighs on both paths alike.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf '%-12s %-8s %10s %10s %10s %8s %14s %14s\n' concurrency path 'req/s' 'p50 ms' 'p99 ms' non-2xx 'server p50 ms' 'server p99 ms'
for c in 1 32; do
  : >"$tmp/invoke"; : >"$tmp/plain"
  for _ in $(seq "$ROUNDS"); do
    measure "$c" /v1/invoke >>"$tmp/invoke"
    measure "$c" /bench/plain >>"$tmp/plain"
  done
  for path in invoke plain; do
    f="$tmp/$path"
    printf '%-12s %-8s %10s %10s %10s %8s %14s %14s\n' "$c" "$path" "$(cut -d' ' -f1 "$f" | median)" "$(cut -d' ' -f2 "$f" | median)" \
      "$(cut -d' ' -f3 "$f" | median)" "$(awk '{ s += $4 } END { print s }' "$f")" "$(cut -d' ' -f5 "$f" | median)" "$(cut -d' ' -f6 "$f" | median)"
  done
  awk -v a="$(cut -d' ' -f1 "$tmp/invoke" | median)" -v b="$(cut -d' ' -f1 "$tmp/plain" | median)" -v c="$c" \
    'BEGIN { printf "%-12s %-8s %9.2fx\n", c, "ratio", a/b }'
done
stop

# A fresh server: RSS after the first 10k calls and after 100k.
serve
for _ in $(seq 60); do
  wrk -t 2 -c 32 -d 5s -s cmd/loadtest/post.lua "http://$ADDR/v1/invoke" >/dev/null
  calls=$(curl -s "http://$ADDR/bench/rss" | sed -n 's/.*"calls":\([0-9]*\).*/\1/p')
  [ "${calls:-0}" -ge 100000 ] && break
done
curl -s "http://$ADDR/bench/rss" | awk '{
  match($0, /"rssAfter10k":[0-9]+/); a = substr($0, RSTART+14, RLENGTH-14)
  match($0, /"rssAfter100k":[0-9]+/); b = substr($0, RSTART+15, RLENGTH-15)
  if (a == 0 || b == 0) { print "RSS: not measured (" $0 ")"; exit 1 }
  printf "RSS after 10k calls %.1f MiB, after 100k %.1f MiB: %+.1f%%\n", a/1048576, b/1048576, (b-a)*100/a }'
