#!/usr/bin/env bash
# The main job: set up, build orbsift_node (release, default features: embedded DDS and
# camera input, no ROS needed), and run it with the default parameters on a ROS domain
# of its own, reading the bundled sample video itself (`input.source: camera`) at the
# video's frame rate. The node logs a summary of what it publishes once a second (fps,
# keypoints and temporal matches per frame, latency) and exits 0 at the end of the
# video; its exit status is this script's.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
# setup.sh may have installed Rust in this run.
export PATH="$HOME/.cargo/bin:$PATH"

video="tests/data/vtest_6s.avi"
# A domain away from the default 0, so no other ROS 2 graph on the network mixes in.
export ROS_DOMAIN_ID="${ORBSIFT_RUN_DOMAIN:-$((10 + $$ % 90))}"
# `cargo run` builds the node where cargo puts it (CARGO_TARGET_DIR included) and execs it.
exec cargo run --release --bin orbsift_node -- --ros-args \
    -p input.source:=camera -p input.device:="$video"
