#!/usr/bin/env bash
# The Jetson build, proven on an x86-64 machine without a Jetson (docs/deploy.md):
#  1. scripts/cross-aarch64.sh --deb: aarch64 orbsift and orbsift_node (glibc 2.35,
#     `cuda,dds`), the bundle (aarch64 NVRTC, sm_87 kernel cache) and the arm64 .deb;
#  2. under qemu-aarch64: `extract` and `match` on the CPU backend write the same JSON as
#     the x86-64 build, byte for byte; `--backend auto` falls back to the CPU with one
#     log line; `kernels build --arch sm_87` with the aarch64 NVRTC compiles the modules
#     of the service's default into the cubins the x86-64 NVRTC compiled for the
#     bundle, byte for byte, and finds the others (seeded from the bundle) cached;
#  3. the .deb: its control data, files and conffiles (dpkg-deb), lintian, the systemd
#     unit (systemd-analyze verify); then the packaged orbsift_node with the packaged
#     parameter file, under qemu, answers the Cyclone DDS peer (tests/peer/orbsift_peer.py)
#     over loopback DDS with Features for each good frame it is sent.
#
# scripts/test.sh runs it last, so CI runs it: from a clean clone everything is built and
# fetched from scratch (docs/deploy.md, Measured). Any prerequisite that cannot be
# installed fails the script with its name; nothing is skipped.
#
# Usage: scripts/test-aarch64.sh [X86_ORBSIFT]
#   X86_ORBSIFT  the x86-64 orbsift, built with the `cuda` feature, to compare with and to
#                build the kernel cache (default target/debug/orbsift, built when missing).
# Env: CROSS_DIR (tools, qemu and work files; default .cross),
#      AARCH64_PROFILE (cargo profile of the aarch64 build; default aarch64-ci, Cargo.toml).
set -euo pipefail
cd "$(dirname "$0")/.."

# Absolute: the node and NVRTC are started from other folders.
cross="$(realpath -m "${CROSS_DIR:-.cross}")"
export CROSS_TOOLS_DIR="$cross/tools"
target_dir="${CARGO_TARGET_DIR:-target}"
x86_orbsift="${1:-$target_dir/debug/orbsift}"
profile="${AARCH64_PROFILE:-aarch64-ci}"
target=aarch64-unknown-linux-gnu
work="$cross/work"
# Debian 12's qemu-user (7.2) lacks IP_MULTICAST_IF, without which rustdds cannot open its
# multicast sender ("Protocol not available"); QEMU 10.0 emulates it.
qemu_min_major=10
qemu_suite=bookworm-backports

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
step() { echo "== test-aarch64 [$((SECONDS / 60))m$((SECONDS % 60))s]: $*"; }
fail() {
    echo "test-aarch64: FAILED: $*" >&2
    exit 1
}

# --- tools ------------------------------------------------------------------------
# The aarch64 glibc and loader for qemu (-L), and the C++ runtime that NVRTC's builtins
# library links (without it NVRTC reports "failed to open libnvrtc-builtins.so"); strip
# for the bundle, lintian for the .deb.
missing=()
[[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]] || missing+=(libc6-arm64-cross)
[[ -e /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ]] || missing+=(libstdc++6-arm64-cross)
command -v aarch64-linux-gnu-strip >/dev/null || missing+=(binutils-aarch64-linux-gnu)
command -v lintian >/dev/null || missing+=(lintian)
command -v systemd-analyze >/dev/null || missing+=(systemd)
if [[ ${#missing[@]} -gt 0 ]]; then
    step "installing ${missing[*]}"
    as_root apt-get update -q || fail "apt-get update (to install ${missing[*]})"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
        fail "could not install ${missing[*]} with apt-get"
fi
[[ -x .venv/bin/python ]] || fail "no .venv (the Cyclone DDS peer's Python): run scripts/setup.sh first"
mkdir -p "$cross"
# qemu-user 10: the system's, else Debian's backports one fetched with apt into $cross/qemu
# (a private source list and lists folder: the system's apt sources stay as they are).
# Its qemu-aarch64 is a static binary.
qemu_major() { "$1" --version 2>/dev/null | sed -n 's/^qemu-aarch64 version \([0-9]*\)\..*/\1/p'; }
qemu="$(command -v qemu-aarch64 || true)"
if [[ -z "$qemu" || "$(qemu_major "$qemu")" -lt $qemu_min_major ]]; then
    qemu="$cross/qemu/usr/bin/qemu-aarch64"
    if [[ "$(qemu_major "$qemu")" -lt $qemu_min_major ]]; then
        step "fetching qemu-user from $qemu_suite"
        apt_dir="$cross/apt"
        rm -rf "$apt_dir" "$cross/qemu"
        mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$cross/qemu"
        echo "deb http://deb.debian.org/debian $qemu_suite main" >"$apt_dir/sources.list"
        apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o APT::Sandbox::User=root)
        apt-get "${apt_opts[@]}" update -q || fail "apt-get update of $qemu_suite (for qemu-user)"
        (cd "$apt_dir" && apt-get "${apt_opts[@]}" download "qemu-user/$qemu_suite") ||
            fail "could not download qemu-user from $qemu_suite"
        dpkg-deb --fsys-tarfile "$apt_dir"/qemu-user_*.deb |
            tar -x -C "$cross/qemu" ./usr/bin/qemu-aarch64
        rm -f "$apt_dir"/qemu-user_*.deb
    fi
    [[ "$(qemu_major "$qemu")" -ge $qemu_min_major ]] ||
        fail "$qemu is not qemu-aarch64 $qemu_min_major or newer"
fi
"$qemu" --version | head -n 1
# Binaries as a Jetson runs them: the aarch64 loader and glibc of libc6-arm64-cross.
run_arm() { "$qemu" -L /usr/aarch64-linux-gnu "$@"; }

if [[ ! -x "$x86_orbsift" ]]; then
    [[ $# -eq 0 ]] || fail "no x86-64 orbsift at $x86_orbsift"
    cargo build --no-default-features --features cuda,cli --bin orbsift
fi

# --- 1. cross build, bundle, package ---------------------------------------------
step "cross build ($profile profile)"
# --fast-deb: cargo-deb's faster xz preset (7 s instead of 45 s here, 22 MB instead of 19 MB).
# --timings: cargo's report of the build, target/cargo-timings/cargo-timing.html.
scripts/cross-aarch64.sh --deb --fast-deb --profile "$profile" --host-orbsift "$x86_orbsift" \
    -- --timings | tee "$cross/cross.log"
deb=$(tail -n 1 "$cross/cross.log")
[[ -f "$deb" ]] || fail "cross-aarch64.sh --deb named no package: $deb"
bundle="$(realpath -m "$target_dir/$target/release/bundle")"
arm_orbsift="$bundle/bin/orbsift"
file -L "$arm_orbsift" | grep -q 'ARM aarch64' || fail "$arm_orbsift is not an aarch64 binary"
newest_glibc=$(aarch64-linux-gnu-objdump -T "$bundle/bin/orbsift" "$bundle/bin/orbsift_node" |
    grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
echo "newest glibc symbol: $newest_glibc"
[[ "$(printf '%s\nGLIBC_2.35\n' "$newest_glibc" | sort -V | tail -n 1)" == GLIBC_2.35 ]] ||
    fail "the binaries need $newest_glibc, newer than JetPack 6's glibc 2.35"

rm -rf "$work"
mkdir -p "$work"

# --- 2-4. three independent checks side by side ------------------------------------
# NVRTC under qemu and the package checks run in the background, each with its own log
# printed when it ends, while the CLI is compared in the foreground: NVRTC and lintian are
# single-threaded, and on a 2-core machine they fill what the comparisons leave idle.
# The packaged node (5.) runs alone afterwards: the peer times its answers.
cubins=("$bundle"/kernels/*.cubin)
[[ ${#cubins[@]} -ge 5 ]] || fail "the bundle has ${#cubins[@]} cubins"
seeded=("$bundle"/kernels/sift_*.cubin "$bundle"/kernels/match_l2-*.cubin)
installed="$work/installed"
jobs_pids=()
# Each part is a process group of its own (set -m), so that a failure stops all of it.
stop_jobs() {
    local pid
    for pid in "${jobs_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}
trap stop_jobs EXIT

# --- 2. NVRTC under qemu --------------------------------------------------------------
check_kernels() {
    step "kernels build --arch sm_87 with the aarch64 NVRTC (qemu)"
    # NVRTC under qemu takes about half a minute a module: the modules of the packaged
    # service's default (ORB and Hamming matching) are compiled, the SIFT and L2 ones are
    # seeded from the bundle's x86-64 cache and must be found there ("cached").
    mkdir -p "$work/kernels"
    cp "${seeded[@]}" "$work/kernels/"
    start=$SECONDS
    LD_LIBRARY_PATH="$bundle/lib" run_arm "$arm_orbsift" kernels build --arch sm_87 \
        --cache-dir "$work/kernels" | tee "$work/kernels.log"
    echo "under qemu in $((SECONDS - start)) s"
    compiled=$(grep -c ' compiled ' "$work/kernels.log" || true)
    cached=$(grep -c ' cached ' "$work/kernels.log" || true)
    [[ $compiled == $((${#cubins[@]} - ${#seeded[@]})) && $cached == "${#seeded[@]}" ]] ||
        fail "expected $((${#cubins[@]} - ${#seeded[@]})) modules compiled and ${#seeded[@]} cached, got $compiled and $cached"
    for cubin in "${cubins[@]}"; do
        cmp "$cubin" "$work/kernels/$(basename "$cubin")" ||
            fail "$(basename "$cubin"): aarch64 NVRTC and x86-64 NVRTC differ"
    done
    echo "$compiled cubins compiled by the aarch64 NVRTC identical to the x86-64 NVRTC's, $cached found cached"
}

# --- 3. the Debian package ----------------------------------------------------------
check_package() {
    step "the package: $deb"
    dpkg-deb --info "$deb"
    # Paths as cargo-deb writes them into data.tar: without a leading "./".
    dpkg-deb --contents "$deb" | tee "$work/contents.txt"
    [[ "$(dpkg-deb --field "$deb" Architecture)" == arm64 ]] || fail "the package is not arm64"
    for path in usr/bin/orbsift usr/bin/orbsift_node usr/lib/orbsift/nvrtc/libnvrtc.so.12 \
        etc/orbsift/orbsift.yaml etc/default/orbsift lib/systemd/system/orbsift.service \
        usr/share/orbsift/config/orb.yaml usr/share/doc/orbsift/copyright; do
        grep -q " $path\$" "$work/contents.txt" || fail "the package lacks $path"
    done
    [[ $(grep -c ' usr/lib/orbsift/kernels/.*-sm_87-nvrtc12\.6-.*\.cubin$' "$work/contents.txt") == "${#cubins[@]}" ]] ||
        fail "the package lacks sm_87 cubins"
    dpkg-deb --info "$deb" conffiles | tee "$work/conffiles"
    for conffile in /etc/orbsift/orbsift.yaml /etc/default/orbsift; do
        grep -qx "$conffile" "$work/conffiles" || fail "$conffile is not a conffile"
    done
    dpkg-deb --info "$deb" postinst | grep 'deb-systemd-helper enable' >/dev/null ||
        fail "postinst does not enable the unit"

    step lintian
    # Errors and warnings fail; packaging/lintian-overrides gives each override its reason.
    # (With --show-overrides --info, lintian 2.116 exits 2 here though every tag is overridden.)
    lintian --fail-on error,warning "$deb"

    mkdir -p "$installed"
    dpkg-deb --extract "$deb" "$installed"
    step "systemd-analyze verify"
    # Against the unpacked package, with coreutils' cp (essential on the target) for the
    # unit's ExecStartPre; the units it pulls in (sysinit.target, ...) are not in that root.
    mkdir -p "$installed/bin"
    cp /bin/cp "$installed/bin/"
    if ! SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --root="$installed" --recursive-errors=no \
        "$installed/lib/systemd/system/orbsift.service" >"$work/verify.log" 2>&1 || [[ -s "$work/verify.log" ]]; then
        cat "$work/verify.log"
        fail "systemd-analyze verify reports a problem with orbsift.service"
    fi
    echo "orbsift.service: verified"
}

# in_background NAME FUNCTION: runs it with its output in $work/NAME.out.
in_background() {
    set -m
    "$2" >"$work/$1.out" 2>&1 &
    set +m
    jobs_pids+=($!)
}
# await NAME PID: prints its output; fails when it failed.
await() {
    local status=0
    wait "$2" || status=$?
    cat "$work/$1.out"
    [[ $status == 0 ]] || fail "$1 (above)"
}
in_background kernels check_kernels
kernels_pid=$!
in_background package check_package
package_pid=$!

# --- 4. the CLI under qemu against the x86-64 build ------------------------------
step "extract and match: aarch64 (qemu) against x86-64"
run_arm "$arm_orbsift" --version
same_json() { # NAME COMMAND...: the JSON of both builds, compared byte for byte
    local name=$1
    shift
    "$x86_orbsift" "$@" --backend cpu --out "$work/$name.x86_64.json" 2>/dev/null
    run_arm "$arm_orbsift" "$@" --backend cpu --out "$work/$name.aarch64.json" 2>/dev/null
    cmp "$work/$name.x86_64.json" "$work/$name.aarch64.json" ||
        fail "$name: aarch64 and x86-64 outputs differ ($work/$name.*.json)"
    echo "$name: identical ($(wc -c <"$work/$name.x86_64.json") bytes)"
}
data=tests/data
for image in graf1.png box.pgm leuvenA.jpg rubberwhale1.png; do
    same_json "extract-orb-$image" extract --algo orb "$data/$image"
    same_json "extract-sift-$image" extract --algo sift "$data/$image"
done
same_json match-orb-graf match --algo orb "$data/graf1.png" "$data/graf3.png"
same_json match-sift-leuven match --algo sift "$data/leuvenA.jpg" "$data/leuvenB.jpg"

step "--backend auto without libcuda"
LD_LIBRARY_PATH="$bundle/lib" RUST_LOG=info run_arm "$arm_orbsift" extract \
    --backend auto "$data/graf1.png" --out "$work/auto.json" 2>"$work/auto.log"
cat "$work/auto.log"
fallbacks=$(grep -c 'CUDA backend unusable (.*libcuda.*): using the CPU backend' "$work/auto.log" || true)
[[ "$fallbacks" == 1 ]] || fail "expected one CPU fallback line naming libcuda, got $fallbacks"
grep -q '"backend": *"cpu"' "$work/auto.json" || fail "--backend auto did not report the CPU backend"
cmp <(grep -v '"backend"' "$work/auto.json") <(grep -v '"backend"' "$work/extract-orb-graf1.png.x86_64.json") ||
    fail "--backend auto features differ from --backend cpu"


await kernels "$kernels_pid"
await package "$package_pid"
trap - EXIT

# --- 5. the packaged node under qemu ---------------------------------------------------
step "the packaged orbsift_node under qemu against the Cyclone DDS peer"
# qemu itself in the background (not through run_arm, whose subshell would leave it running).
domain=$((150 + $$ % 80))
mkdir -p "$work/node-kernels"
ROS_DOMAIN_ID=$domain LD_LIBRARY_PATH="$installed/usr/lib/orbsift/nvrtc" \
    ORBSIFT_KERNEL_CACHE="$work/node-kernels" \
    "$qemu" -L /usr/aarch64-linux-gnu "$installed/usr/bin/orbsift_node" --ros-args \
    --params-file "$installed/etc/orbsift/orbsift.yaml" >"$work/node.log" 2>&1 &
node_pid=$!
trap 'kill "$node_pid" 2>/dev/null || true' EXIT
ROS_DOMAIN_ID=$domain timeout 300 .venv/bin/python tests/peer/orbsift_peer.py \
    --data "$data" --timeout 60 >"$work/peer.json" || true
kill "$node_pid" 2>/dev/null || true
wait "$node_pid" 2>/dev/null || true
trap - EXIT
cat "$work/node.log"
.venv/bin/python - "$work/peer.json" <<'EOF'
import json
import sys

report = json.load(open(sys.argv[1]))
assert report["node_found"], f"the peer never found the node: {report}"
features = {f["sec"]: f for f in report["features"]}
for sec in report["good_secs"]:
    f = features.get(sec)
    assert f is not None, f"no Features for frame {sec}"
    n = f["keypoints"]
    assert f["algorithm"] == "orb" and n > 50, f
    assert f["descriptor_bytes"] == 32 * n and f["array_lengths"] == [n] * 5, f
    assert f["in_image"] and f["frame_id"] == "peer_camera", f
for name, sec in report["bad_cases"].items():
    assert sec not in features, f"Features for the bad frame {name}"
assert report["matches"], "no Matches"
assert all(m["lengths_agree"] and m["indices_in_range"] for m in report["matches"])
shift = report["shift"]
assert shift["matches"] >= 50 and shift["consistent"] >= 0.8 * shift["matches"], shift
# Under qemu the node is about ten times slower than natively: a bad frame still queued
# when the next good one arrives is replaced by it (dropped) instead of rejected. Every
# good frame has its Features, so whatever was dropped was a bad frame.
diagnostics = report["diagnostics"]
rejected, dropped = int(diagnostics["frames_rejected"]), int(diagnostics["frames_dropped"])
assert rejected >= 1 and rejected + dropped == len(report["bad_cases"]), diagnostics
assert diagnostics["backend"] == "cpu", diagnostics
print(f"peer: Features for all {len(report['good_secs'])} good frames, none for the "
      f"{len(report['bad_cases'])} bad ones ({rejected} rejected, {dropped} dropped), "
      f"{shift['consistent']}/{shift['matches']} matches agree with the known shift")
EOF
grep -q 'CUDA backend unusable (.*libcuda.*): using the CPU backend' "$work/node.log" ||
    fail "the packaged node did not log its CPU fallback"
echo "test-aarch64: passed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
