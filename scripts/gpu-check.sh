#!/usr/bin/env bash
# GPU proof for the CUDA ORB and SIFT backends, run on a machine with an NVIDIA GPU:
#   1. parity with the CPU reference (GPU-marked tests of tests/cuda_orb.rs and
#      tests/cuda_sift.rs), and the pipelined ORB path against `extract`
#      (tests/cuda_pipeline.rs, with memcheck),
#   2. compute-sanitizer memcheck and racecheck on both pipelines (and memcheck on CUDA
#      SIFT's frames in every camera encoding),
#   3. `orbsift bench --algo orb --backend cuda`, all SMs, unified memory and --sm-limit 8;
#      `orbsift bench --algo sift --backend cuda`, without and with upscaling, and
#      without upscaling on 8 SMs,
#   4. per-kernel GPU times of one 1920x1080 frame under ncu, when ncu is there,
#   5. the node on the GPU against the node on the CPU (tests/cuda_node.rs: camera
#      encodings converted on the GPU, Features and temporal and stereo Matches, no
#      allocation per frame), with memcheck and racecheck on temporal and stereo
#      matching, and its latency, image received -> Features and Matches published
#      (benches/node_latency.rs),
#   6. the SIFT L2 matcher: identical to the CPU matcher (tests/cuda_sift_match.rs),
#      sanitizers, and its 5000 x 7000 benchmark (benches/cuda_sift_match.rs),
# then a short table. The binaries may be built elsewhere (the GPU machine may have
# no Rust): pass the folder holding `orbsift`, the `cuda_orb-*`, `cuda_pipeline-*`,
# `cuda_node-*`, `cuda_sift-*` and `cuda_sift_match-*` test binaries, and the `node_latency-*` and
# `cuda_sift_match_bench-*` bench binaries (`cargo bench --bench node_latency --no-run`; rename the SIFT match bench
# binary, whose name is the test's).
#
# Usage: scripts/gpu-check.sh [BIN_DIR]   (default: build here with cargo)
# Writes logs under $OUT when set, else under out/gpu-check.
set -uo pipefail
cd "$(dirname "$0")/.."
logs="${OUT:-out/gpu-check}"
mkdir -p "$logs"

bin_dir="${1:-}"
if [[ -z "$bin_dir" ]]; then
    cargo build --release --bin orbsift || exit 1
    test_bin=$(cargo test --release --test cuda_orb --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*cuda_orb[^"]*\)".*/\1/p' | tail -n 1)
    pipeline_test_bin=$(cargo test --release --test cuda_pipeline --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*cuda_pipeline[^"]*\)".*/\1/p' | tail -n 1)
    sift_test_bin=$(cargo test --release --test cuda_sift --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*cuda_sift[^"]*\)".*/\1/p' | tail -n 1)
    node_test_bin=$(cargo test --release --test cuda_node --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*cuda_node[^"]*\)".*/\1/p' | tail -n 1)
    orbsift=target/release/orbsift
    sift_match_test=$(cargo test --release --test cuda_sift_match --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*cuda_sift_match[^"]*\)".*/\1/p' | tail -n 1)
    cargo bench --bench node_latency --no-run || exit 1
    node_bench=$(ls -t target/release/deps/node_latency-* | grep -v '\.d$' | head -n 1)
    sift_match_bench=$(cargo bench --bench cuda_sift_match --no-run --message-format=json 2>/dev/null |
        sed -n 's/.*"executable":"\([^"]*cuda_sift_match[^"]*\)".*/\1/p' | tail -n 1)
else
    orbsift="$bin_dir/orbsift"
    test_bin=$(ls "$bin_dir"/cuda_orb-* | head -n 1)
    pipeline_test_bin=$(ls "$bin_dir"/cuda_pipeline-* | head -n 1)
    sift_test_bin=$(ls "$bin_dir"/cuda_sift-* | head -n 1)
    node_test_bin=$(ls "$bin_dir"/cuda_node-* | head -n 1)
    node_bench=$(ls "$bin_dir"/node_latency-* | head -n 1)
    sift_match_test=$(ls "$bin_dir"/cuda_sift_match-* | head -n 1)
    sift_match_bench=$(ls "$bin_dir"/cuda_sift_match_bench-* | head -n 1)
fi

# cudarc looks for libnvrtc.so, libnvrtc.so.12 (and older): give it the toolkit's
# NVRTC under the first name, whatever its major version.
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9]* 2>/dev/null | grep -v builtins | head -n 1)
if [[ -n "$nvrtc" ]]; then
    mkdir -p /tmp/orbsift-nvrtc
    ln -sf "$nvrtc" /tmp/orbsift-nvrtc/libnvrtc.so
    export LD_LIBRARY_PATH="/tmp/orbsift-nvrtc:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export ORBSIFT_KERNEL_CACHE=/tmp/orbsift-kernels RUST_LOG=${RUST_LOG:-info}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

declare -A status
run() { # name command...
    local name=$1; shift
    echo "== $name: $*"
    local start=$SECONDS
    "$@" >"$logs/$name.log" 2>&1
    local rc=$?
    tail -n 25 "$logs/$name.log"
    status[$name]="rc=$rc ($((SECONDS - start)) s)"
}
# The sanitizers on one GPU test: memcheck|racecheck NAME TEST_BINARY TEST.
memcheck() {
    run "$1" compute-sanitizer --tool memcheck --error-exitcode 9 "$2" --ignored --exact "$3"
}
racecheck() {
    run "$1" compute-sanitizer --tool racecheck --racecheck-report all --error-exitcode 9 \
        "$2" --ignored --exact "$3"
}

run parity "$test_bin" --ignored --test-threads=1 --nocapture
memcheck memcheck "$test_bin" sm_limit_and_repeated_frames_give_identical_results
racecheck racecheck "$test_bin" fast_score_and_small_grids_match_too
run pipeline "$pipeline_test_bin" --ignored --test-threads=1 --nocapture
memcheck pipeline_memcheck "$pipeline_test_bin" pipelined_fused_matches_equal_extract
images=()
for image in tests/data/graf1.png tests/data/leuvenA.jpg tests/data/basketball1.png tests/data/rubberwhale1.png; do
    images+=(--image "$image")
done
bench=("$orbsift" bench --algo orb --backend cuda --iterations 200 "${images[@]}")
run bench "${bench[@]}"
run bench_unified "${bench[@]}" --set memory=unified
run bench_sm8 "${bench[@]}" --sm-limit 8

run sift_parity "$sift_test_bin" --ignored --test-threads=1 --nocapture
memcheck sift_memcheck "$sift_test_bin" small_frames_match_with_root_sift_and_upscaling
racecheck sift_racecheck "$sift_test_bin" small_frames_match_with_root_sift_and_upscaling
memcheck sift_frames_memcheck "$sift_test_bin" every_camera_encoding_gives_the_features_of_its_cpu_grey_bit_for_bit
sift_bench=("$orbsift" bench --algo sift --backend cuda --iterations 200 "${images[@]}")
run sift_bench "${sift_bench[@]}" --set sift.upscale=false
run sift_bench_upscale "${sift_bench[@]}"
run sift_bench_sm8 "${sift_bench[@]}" --set sift.upscale=false --sm-limit 8
if command -v ncu >/dev/null; then
    # One 1920x1080 frame (graf1 resized by `bench`'s own resampling is not on disk:
    # `extract` upscales nothing, so the caller may pass a 1080p image as $NCU_IMAGE).
    frame=${NCU_IMAGE:-tests/data/graf1.png}
    run ncu ncu --clock-control none --metrics gpu__time_duration.sum \
        "$orbsift" extract --algo orb --backend cuda --out "$logs/ncu-features.json" "$frame"
    grep -E "^  [a-z_]+|gpu__time_duration" "$logs/ncu.log" |
        paste - - | awk '{print $1, $(NF)}' | sort -k2 -n -r | head -n 12
fi

run node_parity "$node_test_bin" --ignored --test-threads=1 --nocapture
memcheck node_memcheck "$node_test_bin" the_cuda_node_publishes_the_cpu_nodes_features_and_temporal_matches
racecheck node_racecheck "$node_test_bin" the_cuda_node_publishes_the_cpu_nodes_features_and_temporal_matches
memcheck node_stereo_memcheck "$node_test_bin" the_cuda_node_publishes_the_cpu_nodes_features_and_stereo_matches
racecheck node_stereo_racecheck "$node_test_bin" the_cuda_node_publishes_the_cpu_nodes_features_and_stereo_matches
memcheck node_sift_stereo_memcheck "$node_test_bin" sift_stereo_matches_on_the_gpu_equal_the_cpu_matcher_on_the_published_features
ORBSIFT_DATA_DIR=tests/data run node_latency "$node_bench" --bench node
grep -A2 "^node/" "$logs/node_latency.log" | grep -E "^node/|time:"

run sift_match "$sift_match_test" --ignored --test-threads=1 --nocapture
memcheck sift_match_memcheck "$sift_match_test" tile_edges_single_descriptors_and_empty_sets
racecheck sift_match_racecheck "$sift_match_test" tile_edges_single_descriptors_and_empty_sets
run sift_match_bench "$sift_match_bench" --bench

echo
echo "| check | result |"
echo "|---|---|"
for name in parity memcheck racecheck pipeline pipeline_memcheck bench bench_unified bench_sm8 \
    sift_parity sift_memcheck sift_racecheck sift_frames_memcheck sift_bench sift_bench_upscale sift_bench_sm8 \
    sift_match sift_match_memcheck sift_match_racecheck sift_match_bench ncu \
    node_parity node_memcheck node_racecheck node_stereo_memcheck node_stereo_racecheck \
    node_sift_stereo_memcheck node_latency; do
    echo "| $name | ${status[$name]:-not run} |"
done
grep -h "PARITY descriptor\|ERROR SUMMARY\|RACECHECK SUMMARY" "$logs"/*.log
grep -h "^BENCH" "$logs"/bench*.log "$logs"/sift_bench*.log "$logs"/sift_match_bench.log
for name in parity memcheck racecheck pipeline pipeline_memcheck sift_parity sift_memcheck sift_racecheck \
    sift_match sift_match_memcheck sift_match_racecheck node_parity node_memcheck node_racecheck \
    node_stereo_memcheck node_stereo_racecheck node_sift_stereo_memcheck; do
    [[ ${status[$name]} == rc=0* ]] || exit 1
done
