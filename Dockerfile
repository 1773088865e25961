# packd's container image: a static packd on scratch, no shell, a numeric
# non-root user, and a pack under /app (index.json and its modules; mount
# another one there, or build with --build-arg PACK=dir).
#
#   make image                      build it from this checkout, offline (target prebuilt)
#   podman build -t packd .         build it from source (target image; pulls golang)
#
# docs/deploy.md says how to run it.

# ---- packd and the pack, built from source ----
FROM docker.io/library/golang:1.26 AS build
ARG PACK=wasm-examples/echo
WORKDIR /src
COPY go.mod go.sum ./
COPY abi/guest/go.mod abi/guest/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/packd ./cmd/packd && \
    mkdir -p /out/app && cp "$PACK/index.json" /out/app/ && \
    GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "/out/app/$(basename "$PACK").wasm" "./$PACK" && \
    /out/packd check --index /out/app/index.json --cache-dir /out/cache

# ---- what every packd image is ----
FROM scratch AS base
LABEL org.opencontainers.image.title="packd" \
      org.opencontainers.image.description="A pack service that runs pack code compiled to WebAssembly"
# nobody in distroless: a numeric user, so runAsNonRoot can check it
USER 65532:65532
# calls (PORT) and /metrics
EXPOSE 8080 9464
# packd drains in-flight calls on SIGTERM (up to 8 s)
STOPSIGNAL SIGTERM
ENTRYPOINT ["/packd", "serve"]
CMD ["--index", "/app/index.json"]
# the pack's compilation cache, warm (packd check made it with this very
# packd): used read-only where the root filesystem is
ENV PACKD_CACHE_DIR=/cache

# ---- the image from source (the default target) ----
FROM base AS image
COPY --from=build /out/packd /packd
COPY --from=build /out/app /app
COPY --from=build --chown=65532:65532 /out/cache /cache
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt

# ---- the image from what make image built in this checkout ----
FROM base AS prebuilt
ARG PACK=wasm-examples/echo
COPY bin/packd /packd
COPY ${PACK}/index.json ${PACK}/*.wasm /app/
COPY --chown=65532:65532 bin/image-cache /cache
# the roots of trust of packd's TLS clients (a registry, a pack's egress,
# OTLP): the CA certificates of the machine that built it
COPY bin/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
