#!/usr/bin/env bash
# Compiles every CUDA kernel module with NVRTC for the Jetson and data-centre
# architectures, without a GPU: sm_72, sm_87 and sm_90 with NVRTC 12 (the
# nvidia-cuda-nvrtc-cu12 wheel; NVRTC 13 dropped sm_72) and sm_110 with NVRTC 13
# (the nvidia-cuda-nvrtc 13.x wheel). Fails on the first compile error, printing the log.
#
# cudarc (dynamic-loading) dlopen()s libnvrtc by name: libnvrtc.so, then
# libnvrtc.so.12 / .11 / ... (cudarc 0.19 `get_lib_name_candidates`; no `.so.13`), so
# LD_LIBRARY_PATH points at a folder holding a `libnvrtc.so` link to the wheel's library.
#
# Usage: scripts/kernels-check.sh [path/to/orbsift]   (default: builds target/release/orbsift)
# Env: KERNELS_CHECK_DIR (venvs and caches, default .venv/kernels-check)
set -euo pipefail
cd "$(dirname "$0")/.."

work="${KERNELS_CHECK_DIR:-.venv/kernels-check}"
bin="${1:-}"
if [[ -z "$bin" ]]; then
    cargo build --release --bin orbsift
    bin="${CARGO_TARGET_DIR:-target}/release/orbsift"
fi
mkdir -p "$work"

# venv_with NAME REQUIREMENT: a venv holding the wheel; prints the folder of a libnvrtc.so link.
venv_with() {
    local name=$1 requirement=$2 venv="$work/$1"
    if [[ ! -x "$venv/bin/python" ]]; then
        python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install -q --disable-pip-version-check "$requirement" >&2
    local lib
    lib=$(find "$venv" -name 'libnvrtc.so.1[0-9]*' ! -name '*builtins*' | sort | head -n 1)
    if [[ -z "$lib" ]]; then
        echo "kernels-check: no libnvrtc in the $requirement wheel" >&2
        exit 1
    fi
    ln -sf "$(realpath "$lib")" "$(dirname "$lib")/libnvrtc.so"
    dirname "$(realpath "$lib")"
}

nvrtc12=$(venv_with nvrtc12 'nvidia-cuda-nvrtc-cu12>=12.6,<13')
nvrtc13=$(venv_with nvrtc13 'nvidia-cuda-nvrtc>=13,<14')

status=0
for target in sm_72:$nvrtc12 sm_87:$nvrtc12 sm_90:$nvrtc12 sm_110:$nvrtc13; do
    arch=${target%%:*}
    libdir=${target#*:}
    echo "== $arch (NVRTC from $libdir)"
    if ! LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$bin" kernels build --arch "$arch" --cache-dir "$work/cache"; then
        status=1
    fi
done
exit $status
