#!/usr/bin/env bash
# The project's test command (README.md, .ci/run): set up, then lint (Rust and the
# Dockerfiles), build the CPU-only CLI, and run every test. Stops at the first failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
# setup.sh may have installed Rust in this run.
export PATH="$HOME/.cargo/bin:$PATH"

set -x
cargo fmt --check
.venv/bin/hadolint docker/Dockerfile*
cargo clippy --all-targets -- -D warnings
cargo build --no-default-features --bin orbsift
cargo test --all-targets
# The r2r transport links only against a ROS 2 install: type-check it without one.
cargo check --features r2r,r2r/doc-only
cargo test --doc
# Every CUDA kernel module compiles with NVRTC for sm_72, sm_87, sm_90 and sm_110 (no GPU
# needed; NVRTC comes from PyPI wheels), with the binary `cargo test` just built.
bash scripts/kernels-check.sh target/debug/orbsift
# The Jetson build: aarch64 binaries under qemu against this build, the arm64 .deb.
bash scripts/test-aarch64.sh target/debug/orbsift
