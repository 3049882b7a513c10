#!/usr/bin/env bash
# Builds rmw_cyclonedds_cpp (ROS 2 Jazzy's Cyclone DDS middleware) from source against the
# PyPI-wheel ROS prefix of scripts/setup-ros.sh, for running the r2r node, rclpy and the
# `ros2` CLI on Cyclone DDS. A manual tool: not part of CI or of scripts/test-ros.sh.
#
# What it builds (pinned; a source at any other commit is refused):
#   Eclipse Cyclone DDS C   0.10.5  (commit 2cdd114cbd18340c606573b4cc8dc20cc161ec5a), the
#                           series Jazzy ships; cmake, Release, without shared memory
#                           (iceoryx), DDS Security/OpenSSL, idlc, ddsperf, tests, examples
#   rmw_cyclonedds_cpp      2.2.2   (commit 7645474548c58f8244c1a51ebdc408150789c84c), the
#                           latest Jazzy release of ros2/rmw_cyclonedds; cmake (ament_cmake
#                           from the wheels) against the ROS prefix: rmw, rmw_dds_common,
#                           rcutils, rcpputils, rosidl typesupport introspection, tracetools
#
# Where the sources come from (this machine may have no internet):
#   CYCLONEDDS_SRC       a git repository of eclipse-cyclonedds/cyclonedds (bare or not,
#                        any clone or mirror holding the commit above), or a source tree
#                        of 0.10.5 (its package.xml is checked)
#   RMW_CYCLONEDDS_SRC   the same for ros2/rmw_cyclonedds at 2.2.2 (the repository root,
#                        which holds rmw_cyclonedds_cpp/)
#   Unset: `git clone --depth 1` of the tag from GitHub (needs the network).
# Other settings:
#   ROS_PREFIX           the ROS prefix to build against, default .ros/venv (setup-ros.sh)
#   RMW_CYCLONEDDS_OUT   where everything goes, default .ros/rmw_cyclonedds (ignored):
#                          src/, build/          exported sources, cmake build folders
#                          lib/libddsc.so.0, lib/librmw_cyclonedds_cpp.so, include/, share/
#                          with-rmw-cyclonedds   runs a command on rmw_cyclonedds_cpp (below)
# Idempotent: a prefix that is already built for these commits and this ROS prefix is left
# alone (stamp: .ros/rmw_cyclonedds/.stamp); delete the folder to rebuild.
# Time: 2-3 minutes on 2 busy cores (75-90 s of CPU, most of it Cyclone DDS); build jobs:
# JOBS (default: the number of CPUs). Needs gcc/g++ and make; cmake is the wheels'.
#
# How the middleware is chosen: the wheels ship no librmw_implementation.so (the library
# that loads the middleware named by RMW_IMPLEMENTATION at run time); their librcl.so links
# librmw_fastrtps_cpp.so directly, and so does every r2r binary built against them. So
# RMW_IMPLEMENTATION alone selects nothing here. `with-rmw-cyclonedds CMD…` runs CMD with
# LD_PRELOAD=librmw_cyclonedds_cpp.so, whose rmw_* functions then take precedence over
# Fast DDS's (librcl.so calls them through the dynamic linker), plus
# RMW_IMPLEMENTATION=rmw_cyclonedds_cpp (rcl checks that it names the middleware it got) and
# the library/ament paths. Nothing is rebuilt: the same orbsift_node binary runs on either.
#   .ros/rmw_cyclonedds/with-rmw-cyclonedds python3 -c 'import rclpy; rclpy.init()
#       print(rclpy.utilities.get_rmw_implementation_identifier())'   # rmw_cyclonedds_cpp
#   CYCLONEDDS_URI=file://$PWD/config/cyclonedds-large-data.xml \
#       .ros/rmw_cyclonedds/with-rmw-cyclonedds .ros/ws/build/orbsift/release/orbsift_node
# (run from a shell that has sourced .ros/setup.bash).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$(cd "${ROS_PREFIX:-$root/.ros/venv}" && pwd -P)"
out="${RMW_CYCLONEDDS_OUT:-$root/.ros/rmw_cyclonedds}"
jobs="${JOBS:-$(nproc)}"

cyclonedds_tag=0.10.5
cyclonedds_commit=2cdd114cbd18340c606573b4cc8dc20cc161ec5a
rmw_tag=2.2.2
rmw_commit=7645474548c58f8244c1a51ebdc408150789c84c

if [ ! -f "$prefix/share/rmw/package.xml" ] || [ ! -x "$prefix/bin/cmake" ]; then
    echo "build-rmw-cyclonedds: $prefix is not the ROS prefix of scripts/setup-ros.sh" \
        "(no share/rmw or bin/cmake); run that first or set ROS_PREFIX" >&2
    exit 1
fi

stamp="$out/.stamp"
wanted="cyclonedds $cyclonedds_commit rmw_cyclonedds $rmw_commit prefix $prefix"
if [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ] &&
    [ -f "$out/lib/librmw_cyclonedds_cpp.so" ]; then
    echo "build-rmw-cyclonedds: $out is up to date"
    exit 0
fi

# fetch NAME SOURCE TAG COMMIT URL PACKAGE_XML: the source tree in $out/src/NAME.
fetch() {
    local name="$1" source="$2" tag="$3" commit="$4" url="$5" package_xml="$6"
    local dest="$out/src/$name" gitdir
    rm -rf "$dest"
    mkdir -p "$dest"
    if [ -z "$source" ]; then
        echo "build-rmw-cyclonedds: cloning $url $tag"
        git clone -q --depth 1 --branch "$tag" "$url" "$dest"
        gitdir="$dest/.git"
    elif [ -d "$source/.git" ] || [ -f "$source/HEAD" ]; then
        gitdir="$source"
        [ -d "$source/.git" ] && gitdir="$source/.git"
        echo "build-rmw-cyclonedds: exporting $name $tag from $source"
        git --git-dir="$gitdir" archive --format=tar "$commit" | tar -x -C "$dest"
    else
        echo "build-rmw-cyclonedds: copying the $name source tree $source"
        cp -a "$source/." "$dest/"
        gitdir=""
    fi
    if [ -n "$gitdir" ]; then
        local got
        got="$(git --git-dir="$gitdir" rev-parse "$tag^{commit}" 2>/dev/null || true)"
        if [ -n "$source" ] && ! git --git-dir="$gitdir" cat-file -e "$commit^{commit}"; then
            echo "build-rmw-cyclonedds: $source has no commit $commit ($name $tag)" >&2
            exit 1
        fi
        if [ -z "$source" ] && [ "$got" != "$commit" ]; then
            echo "build-rmw-cyclonedds: $url $tag is $got, not $commit" >&2
            exit 1
        fi
    fi
    if ! grep -q "<version>$tag</version>" "$dest/$package_xml"; then
        echo "build-rmw-cyclonedds: $dest/$package_xml is not version $tag" >&2
        exit 1
    fi
}

fetch cyclonedds "${CYCLONEDDS_SRC:-}" "$cyclonedds_tag" "$cyclonedds_commit" \
    https://github.com/eclipse-cyclonedds/cyclonedds.git package.xml
fetch rmw_cyclonedds "${RMW_CYCLONEDDS_SRC:-}" "$rmw_tag" "$rmw_commit" \
    https://github.com/ros2/rmw_cyclonedds.git rmw_cyclonedds_cpp/package.xml

export PATH="$prefix/bin:$PATH"
# The libraries of the ROS prefix must not be found through a Python of another venv.
export CMAKE_PREFIX_PATH="$out:$prefix"
export AMENT_PREFIX_PATH="$prefix"
export LD_LIBRARY_PATH="$out/lib:$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "build-rmw-cyclonedds: building Cyclone DDS $cyclonedds_tag (a few minutes)"
cmake -S "$out/src/cyclonedds" -B "$out/build/cyclonedds" -Wno-dev \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$out" \
    -DBUILD_TESTING=OFF -DBUILD_EXAMPLES=OFF -DBUILD_DOCS=OFF \
    -DBUILD_IDLC=OFF -DBUILD_DDSPERF=OFF \
    -DENABLE_SHM=OFF -DENABLE_SECURITY=OFF -DENABLE_SSL=OFF \
    >"$out/build-cyclonedds.log" 2>&1 || { cat "$out/build-cyclonedds.log" >&2; exit 1; }
cmake --build "$out/build/cyclonedds" --target install -j "$jobs" \
    >>"$out/build-cyclonedds.log" 2>&1 || { tail -50 "$out/build-cyclonedds.log" >&2; exit 1; }

# The wheels' tracetools exports `lttng-ust` as a library to link, but ships it only
# renamed by auditwheel (site-packages/ros_tracetools.libs/liblttng-ust-<hash>.so.0.0.0),
# so `-llttng-ust` fails. rmw_cyclonedds_cpp calls only libtracetools' functions; a linker
# script of that name pointing at the wheel's copy, AS_NEEDED, satisfies the link without
# adding a dependency.
lttng="$(find "$prefix/" -path '*ros_tracetools.libs/liblttng-ust-*.so*' \
    ! -name '*tracepoint*' -print -quit)"
if [ -z "$lttng" ]; then
    echo "build-rmw-cyclonedds: no liblttng-ust in $prefix (ros_tracetools.libs)" >&2
    exit 1
fi
mkdir -p "$out/build/link"
echo "INPUT(AS_NEEDED($lttng))" >"$out/build/link/liblttng-ust.so"

# The wheels' libraries find their renamed dependencies only through the `ros_*.libs`
# folders of site-packages (their own RPATH, $ORIGIN/../../../ros_*.libs, points outside
# the venv), which the r2r build puts in every binary's RPATH. librmw_cyclonedds_cpp.so is
# preloaded before anything else has loaded them, so it carries the same folders as an
# old-style DT_RPATH, which the dynamic linker also searches for its dependencies'
# dependencies (libtracetools.so -> liblttng-ust-<hash>.so).
rpath='$ORIGIN'";$prefix/lib"
for libs in "$prefix"/lib/python3*/site-packages/ros_*.libs; do
    [ -d "$libs" ] && rpath="$rpath;$libs"
done

echo "build-rmw-cyclonedds: building rmw_cyclonedds_cpp $rmw_tag"
cmake -S "$out/src/rmw_cyclonedds/rmw_cyclonedds_cpp" -B "$out/build/rmw_cyclonedds_cpp" \
    -Wno-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$out" -DBUILD_TESTING=OFF \
    -DPython3_EXECUTABLE="$prefix/bin/python" -DCMAKE_INSTALL_RPATH="$rpath" \
    -DCMAKE_SHARED_LINKER_FLAGS="-L$out/build/link -Wl,--disable-new-dtags" \
    >"$out/build-rmw.log" 2>&1 || { cat "$out/build-rmw.log" >&2; exit 1; }
cmake --build "$out/build/rmw_cyclonedds_cpp" --target install -j "$jobs" \
    >>"$out/build-rmw.log" 2>&1 || { tail -50 "$out/build-rmw.log" >&2; exit 1; }

# The runner: the ROS prefix's environment is the caller's (.ros/setup.bash); this adds
# the middleware. LD_PRELOAD only for CMD and its children, never for a whole shell.
cat >"$out/with-rmw-cyclonedds" <<'RUNNER'
#!/usr/bin/env bash
# Runs a command on rmw_cyclonedds_cpp (made by scripts/build-rmw-cyclonedds.sh):
#   with-rmw-cyclonedds CMD [ARGS…]   (from a shell that has sourced .ros/setup.bash)
# The wheels' librcl.so links Fast DDS's middleware directly; preloading
# librmw_cyclonedds_cpp.so makes its rmw_* functions the ones rcl calls.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export RMW_IMPLEMENTATION=rmw_cyclonedds_cpp
export LD_PRELOAD="$here/lib/librmw_cyclonedds_cpp.so${LD_PRELOAD:+:$LD_PRELOAD}"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AMENT_PREFIX_PATH="$here${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
exec "$@"
RUNNER
chmod +x "$out/with-rmw-cyclonedds"

echo "$wanted" >"$stamp"
echo "build-rmw-cyclonedds: ready: $out/with-rmw-cyclonedds CMD… (after source .ros/setup.bash)"
