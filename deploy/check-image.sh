#!/usr/bin/env bash
# make image-check: the image as an orchestrator sees it. Running it is not
# possible on CI's machine; the binary it holds is the one make test built
# from this checkout (bin/packd), and the black-box suite tested.
set -euo pipefail
engine=${PACKD_ENGINE:?} image=${PACKD_IMAGE:?}
got=$("$engine" image inspect "$image" --format '{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.Cmd}}|{{json .Config.ExposedPorts}}|{{.Config.StopSignal}}')
want='65532:65532|["/packd","serve"]|["--index","/app/index.json"]|{"8080/tcp":{},"9464/tcp":{}}|SIGTERM'
if [ "$got" != "$want" ]; then
  echo "image-check: $image is $got" >&2
  echo "image-check: want         $want" >&2
  exit 1
fi
size=$("$engine" image inspect "$image" --format '{{.Size}}')
# packd (static), the echo pack and its warm compilation cache (35 MiB:
# wazero's entry, the pass's, the code packd maps), nothing else: no
# shell, no distribution
if [ "$size" -gt $((80 << 20)) ]; then
  echo "image-check: $image is $size bytes, over 80 MiB" >&2
  exit 1
fi
env=$("$engine" image inspect "$image" --format '{{json .Config.Env}}')
case "$env" in
  *'"PACKD_CACHE_DIR=/cache"'*) ;;
  *) echo "image-check: $image does not set PACKD_CACHE_DIR=/cache: $env" >&2; exit 1 ;;
esac
# The cache as packd in the image finds it, read from a container made (not
# run): its key, a sealed wazero entry, the pass's entry with the code and
# the description beside it, all the image user's.
ctr=$("$engine" create "$image")
trap '"$engine" rm -f "$ctr" >/dev/null' EXIT
files=$("$engine" export "$ctr" | tar -tvf - | awk '$6 ~ /^cache\// {print $2, $6}')
for want in 'cache/packd-cache.key$' 'cache/wazero-[^/]*/[0-9a-f]*\.seal$' 'cache/packd-pass/[0-9a-f]*/[0-9a-f]*\.code$' 'cache/packd-pass/[0-9a-f]*/[0-9a-f]*\.describe$'; do
  if ! grep -q "^65532/65532 $want" <<<"$files"; then
    echo "image-check: $image has no $want owned by 65532 in its cache:" >&2
    echo "$files" >&2
    exit 1
  fi
done
# The roots of trust Go's TLS clients read on Linux: without them, a pull
# from a registry, a pack's HTTPS egress and OTLP over TLS all fail.
if ! "$engine" export "$ctr" | tar -tvf - | awk '$6 == "etc/ssl/certs/ca-certificates.crt" && $3 > 10000 {found=1} END {exit !found}'; then
  echo "image-check: $image has no CA certificates at /etc/ssl/certs/ca-certificates.crt" >&2
  exit 1
fi
echo "image-check: $image: user 65532, entrypoint packd serve, ports 8080 and 9464, SIGTERM, a warm cache at /cache, CA certificates, $((size >> 20)) MiB"
