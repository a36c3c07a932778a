# The same image as `cargo xtask image`, for people who build with Docker.
#
# `cargo xtask image` writes this image as an OCI layout without any container
# engine (see docs/deploy.md); this file is the Docker equivalent. It copies a
# binary that `cargo xtask dist` already built, so it needs no Rust toolchain:
#
#   cargo xtask dist
#   docker build -t mm2-checkpoint:0.1.0 .
#   docker build --build-arg ARCH=aarch64 --platform linux/arm64 -t mm2-checkpoint:0.1.0-arm64 .
#   docker build --build-arg ARCH=armv7 --build-arg ABI=musleabihf --platform linux/arm/v7 -t mm2-checkpoint:0.1.0-arm-v7 .
#   docker build --build-arg VARIANT=-ring -t mm2-checkpoint:0.1.0-ring .   # after --variant ring
#
# Not built in this project's CI: there is no Docker daemon there.
FROM scratch

ARG VERSION=0.1.0
# x86_64, aarch64 or armv7
ARG ARCH=x86_64
# musl, or musleabihf for armv7 (the end of the target triple)
ARG ABI=musl
# empty (graviola, the default) or -ring
ARG VARIANT=

# The file is already mode 0755 and COPY makes it root-owned.
COPY target/dist/mm2-checkpoint-${VERSION}-${ARCH}-linux-${ABI}${VARIANT} /mm2-checkpoint

LABEL org.opencontainers.image.title="mm2-checkpoint" \
      org.opencontainers.image.description="MirrorMaker 2 checkpointing (offset translation and group offset sync) as one small static binary." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"

# The default arguments serve /metrics, /healthz and /readyz on port 9464,
# which the manifests in deploy/kubernetes/ probe. `cargo xtask check-deploy`
# checks these four lines against the image `cargo xtask image` writes.
USER 65532:65532
EXPOSE 9464
ENTRYPOINT ["/mm2-checkpoint"]
CMD ["run", "--config", "/etc/mm2-checkpoint/mm2.properties", "--metrics-addr", "[::]:9464"]
