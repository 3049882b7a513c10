#!/usr/bin/env bash
# CUDA SIFT beside CudaSift (../shared/peers/cudasift) in one run on the GPU machine, at
# matched feature counts, on the same frames: `orbsift bench` resizes the four test photos
# to each size and writes them as PGM (--save-frames), CudaSift times them at its default
# threshold (3) and at 8 (few features), and orbsift is timed again with its contrast
# threshold set so that each size gives CudaSift's count (--sift-features). Then orbsift
# alone: upscaled (OpenCV's default) and on 8 SMs. Medians of 200 frames on both sides.
#
# Usage: perf/sift_vs_cudasift.sh ORBSIFT [OTHER_ORBSIFT...]   (each binary timed in turn)
# Env: CUDASIFT_DIR (default ../shared/peers/cudasift), OUT (logs; default out/sift-vs-cudasift)
set -uo pipefail
cd "$(dirname "$0")/.."
logs="${OUT:-out/sift-vs-cudasift}"
peer="${CUDASIFT_DIR:-../shared/peers/cudasift}"
mkdir -p "$logs"
[[ $# -ge 1 ]] || { echo "usage: $0 ORBSIFT [OTHER_ORBSIFT...]" >&2; exit 2; }

nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9]* 2>/dev/null | grep -v builtins | head -n 1)
if [[ -n "$nvrtc" ]]; then
    mkdir -p /tmp/orbsift-nvrtc
    ln -sf "$nvrtc" /tmp/orbsift-nvrtc/libnvrtc.so
    export LD_LIBRARY_PATH="/tmp/orbsift-nvrtc:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export ORBSIFT_KERNEL_CACHE=/tmp/orbsift-kernels
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
date -u

work=$(mktemp -d)
bash "$peer/build.sh" "$work" || exit 1
frames="$work/frames"
images=()
for image in graf1.png leuvenA.jpg basketball1.png rubberwhale1.png; do
    images+=(--image "tests/data/$image")
done
bench=(bench --algo sift --backend cuda --iterations 200 "${images[@]}" --set sift.upscale=false)

# CudaSift's feature count at each size for THRESH, comma-separated, after timing it.
cudasift_counts() {
    local counts=() size
    for size in 640x480 1280x960 1920x1080 3840x2160; do
        "$work/cudasift_bench" time "$1" 200 "$frames/$size"-*.pgm | tee -a "$logs/cudasift.log" >&2
        counts+=("$(grep "size=$size thresh=$1" "$logs/cudasift.log" | tail -n 1 |
            sed 's/.*features=\([0-9]*\).*/\1/')")
    done
    local IFS=,
    echo "${counts[*]}"
}

n=0
for orbsift in "$@"; do
    n=$((n + 1))
    echo "== orbsift $n: $orbsift"
    if [[ $n == 1 ]]; then
        "$orbsift" "${bench[@]}" --save-frames "$frames" | tee "$logs/orbsift$n-default.log"
        default_counts=$(cudasift_counts 3)
        few_counts=$(cudasift_counts 8)
    else
        "$orbsift" "${bench[@]}" | tee "$logs/orbsift$n-default.log"
    fi
    "$orbsift" "${bench[@]}" --sift-features "$default_counts" | tee "$logs/orbsift$n-matched.log"
    "$orbsift" "${bench[@]}" --sift-features "$few_counts" | tee "$logs/orbsift$n-few.log"
    "$orbsift" bench --algo sift --backend cuda --iterations 200 "${images[@]}" |
        tee "$logs/orbsift$n-upscale.log"
    "$orbsift" "${bench[@]}" --sm-limit 8 | tee "$logs/orbsift$n-sm8.log"
    "$orbsift" "${bench[@]}" --sm-limit 8 --sift-features "$default_counts" |
        tee "$logs/orbsift$n-sm8-matched.log"
done

echo
echo "CudaSift thresh 3: $default_counts features; thresh 8: $few_counts"
grep -h "^CUDASIFT" "$logs/cudasift.log"
for log in "$logs"/orbsift*.log; do
    echo "-- $(basename "$log")"
    grep -h "^BENCH" "$log" | sed 's/ device="[^"]*"//; s/ upload_ms_median=[^ ]*//; s/ match_ms_median=[^ ]*//'
done
