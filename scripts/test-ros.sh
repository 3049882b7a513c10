#!/usr/bin/env bash
# The tests that need a real ROS 2 (Jazzy from PyPI wheels, scripts/setup-ros.sh), run by
# scripts/test.sh after the others. The node is built once, in release, with the
# features of the docs' recipe, in the target folder colcon uses (.ros/ws/build/orbsift):
# 1. the r2r node built and linked, then run with no ROS environment at all: its
#    libraries are found through the binary's RPATH;
# 2. the workspace recipe of docs/ros-node.md, as written, in .ros/ws: colcon builds
#    orbsift (colcon-ros-cargo, cargo-ament-build) into install/, reusing step 1's build;
# 3. `ros2 launch orbsift orbsift.launch.py` with launch and launch_ros from
#    ../shared/peers/ros2-launch, seen and fed by rclpy (tests/ros_launch.rs);
# 4. the rclpy peer tests (tests/node_rclpy.rs) against that r2r node, as `cargo test`
#    ran them against the embedded DDS node.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
ws="$root/.ros/ws"
launch_peer="$root/../shared/peers/ros2-launch"
# The features of the docs' recipe: the r2r node, with the CUDA backend, without the
# embedded DDS transport and the OpenCV camera input.
features=(--release --no-default-features --features cuda,r2r,cli)

bash scripts/setup-ros.sh
export PATH="$HOME/.cargo/bin:$PATH"

# tests/ros_launch.rs is built by CI's `cargo test --all-targets` before (so this costs
# nothing there), with the default features, before ROS is sourced: sourcing it changes
# CMAKE_PREFIX_PATH, which the opencv crate's build watches. Built with the r2r features
# instead, the dev-dependencies' features would compile r2r a second time.
test_binary() {
    cargo test --test "$1" --no-run --message-format=json |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m["executable"]:
        print(m["executable"])' "$1"
}
launch_test="$(test_binary ros_launch)"
rclpy_test="$(test_binary node_rclpy)"

set +u # the venv's activate and colcon's scripts read unset variables
# shellcheck disable=SC1091
source .ros/setup.bash
set -u
# The builds below see the ROS prefix and orbsift_msgs only, as on a first run, not the
# packages earlier runs installed in .ros/ws (its local setup adds them): r2r's build
# script regenerates and recompiles every binding when these paths change, and colcon
# puts orbsift_msgs back in front of them, which would rebuild r2r a second time.
without_installed() {
    tr ':' '\n' <<<"$1" | grep -v -x -e "$ws/install/orbsift" -e "$ws/install/composition_interfaces" |
        paste -sd:
}
AMENT_PREFIX_PATH="$(without_installed "$AMENT_PREFIX_PATH")"
CMAKE_PREFIX_PATH="$(without_installed "$CMAKE_PREFIX_PATH")"
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$((100 + $$ % 100))}"

export CARGO_TARGET_DIR="$ws/build/orbsift"

set -x
# 1. The plain build, into the target folder colcon will use.
cargo build "${features[@]}"
node="$CARGO_TARGET_DIR/release/orbsift_node"
# Nothing sourced, no LD_LIBRARY_PATH: starts, then exits 0 on SIGINT.
status=0
env -i HOME="$HOME" ROS_DOMAIN_ID="$ROS_DOMAIN_ID" \
    timeout --preserve-status -s INT 5 "$node" --ros-args -r __node:=orbsift_smoke || status=$?
[ "$status" -eq 0 ] || { echo "orbsift_node without ROS sourced: exit status $status" >&2; exit 1; }

# 2. The workspace recipe (docs/ros-node.md): the package sources linked into src/.
ln -sfn ../../.. "$ws/src/orbsift"
ln -sfn "$launch_peer/composition_interfaces" "$ws/src/composition_interfaces"
cd "$ws"
colcon build --packages-select orbsift --event-handlers console_direct+ \
    --cargo-args "${features[@]}"
# launch_ros imports composition_interfaces, which has no wheel (and the wheels carry no linters).
colcon build --packages-select composition_interfaces --cmake-args -DBUILD_TESTING=OFF
cd "$root"
for installed in lib/orbsift/orbsift_node share/orbsift/launch/orbsift.launch.py \
    share/orbsift/config/orb.yaml share/orbsift/config/stereo.yaml share/orbsift/package.xml \
    share/ament_index/resource_index/packages/orbsift; do
    [ -e "$ws/install/orbsift/$installed" ] || { echo "colcon installed no $installed" >&2; exit 1; }
done
set +u
# shellcheck disable=SC1091
source "$ws/install/local_setup.bash"
set -u

# 3. ros2 launch.
export PYTHONPATH="$launch_peer/src${PYTHONPATH:+:$PYTHONPATH}"
"$launch_test" --ignored --test-threads=1

# 4. rclpy against the r2r node.
ORBSIFT_TEST_R2R_NODE="$node" "$rclpy_test" --test-threads=1
