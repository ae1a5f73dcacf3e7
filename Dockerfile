# The elasticsim image: the simulator binary, the shipped scenarios and the committed nightly
# baselines, so `elasticsim nightly` runs in it as it does in a checkout. Used by
# deploy/k8s/nightly-job.yaml (one pod per shard) and deploy/k8s/merge-job.yaml.
#
#   docker build -t elasticsim:latest .

# Build stage: the same toolchain as CI, and the system libraries plotters needs for PNGs.
FROM rust:1.95-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends pkg-config libfontconfig1-dev libfreetype-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin elasticsim

# Run stage: the binary, the fonts and libraries its plots need, scenarios and baselines.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libfontconfig1 libfreetype6 fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/elasticsim /usr/local/bin/elasticsim
WORKDIR /work
COPY scenarios/ /work/scenarios/
COPY reports/baselines/ /work/reports/baselines/
# Results go to a mounted volume (/results in the Kubernetes manifests); run unprivileged.
RUN useradd --uid 10001 --no-create-home elasticsim && mkdir /results \
    && chown elasticsim /results
USER 10001
ENTRYPOINT ["/usr/local/bin/elasticsim"]
CMD ["--help"]
