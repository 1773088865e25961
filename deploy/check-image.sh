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
# packd (static) and the echo pack, nothing else: no shell, no distribution
if [ "$size" -gt $((40 << 20)) ]; then
  echo "image-check: $image is $size bytes, over 40 MiB" >&2
  exit 1
fi
echo "image-check: $image: user 65532, entrypoint packd serve, ports 8080 and 9464, SIGTERM, $((size >> 20)) MiB"
