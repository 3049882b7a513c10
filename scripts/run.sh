#!/usr/bin/env bash
# The main job: set up, build orbsift_node (release, default features: embedded DDS,
# no ROS needed), start it with the default parameters on a ROS domain of its own,
# play the bundled sample video into its `image` topic at the video's frame rate while
# printing a live summary of what it publishes, then stop it. Exits non-zero when the
# node published nothing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
# setup.sh may have installed Rust in this run.
export PATH="$HOME/.cargo/bin:$PATH"

video="tests/data/vtest_6s.avi"
cargo build --release --bin orbsift_node

# A domain away from the default 0, so no other ROS 2 graph on the network mixes in.
export ROS_DOMAIN_ID="${ORBSIFT_RUN_DOMAIN:-$((10 + $$ % 90))}"
target/release/orbsift_node &
node=$!
node_status=
stop_node() {
    [ -n "$node_status" ] && return
    if kill -0 "$node" 2>/dev/null; then
        kill -INT "$node"
        # Bounded: a node that ignores SIGINT for 10 s is killed.
        for _ in $(seq 100); do kill -0 "$node" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$node" 2>/dev/null; then
            echo "run.sh: orbsift_node did not stop on SIGINT; killing it" >&2
            kill -KILL "$node"
        fi
    fi
    node_status=0
    wait "$node" || node_status=$?
}
trap stop_node EXIT

player_status=0
timeout 120 .venv/bin/python tests/peer/play_video.py "$video" --wait 30 || player_status=$?
stop_node
echo "orbsift_node stopped (exit status $node_status)"
[ "$player_status" -eq 0 ] || exit "$player_status"
exit "$node_status"
