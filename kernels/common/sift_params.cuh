// The parameters of the SIFT kernels, one struct per kernel: the scale space's
// (kernels/sift/pyramid.cu, levels.cu, small_octaves.cu) and those after it
// (extrema.cu, refine.cu, orientation.cu, order.cu, describe.cu), and the
// structure-of-arrays views they pass each other. Mirrored in
// src/cuda/abi/sift_params.rs: change both together (the ABI_ checks tell a mismatch).
// `counters` is the frame's SiftCounters (common/sift_octaves.cuh): a kernel advances
// and reads the ones it names.
#pragma once

#include "common/abi.cuh"
#include "common/blur_jobs.cuh"
#include "common/sift_octaves.cuh"

// The parameters of the tiled blur kernels (`sift_blur_dog_*`, kernels/sift/pyramid.cu,
// and `sift_levels_*`, kernels/sift/levels.cu): `n_jobs` jobs over `total_tiles` tiles,
// with shared memory sized for radii up to `max_radius`.
struct SiftTiledParams {
    const LevelsJob* jobs;
    const unsigned char* frame;
    float* pyramid;
    const float* taps;
    unsigned int* rows_done;  // the frame's tile-row counters (common/tile_flow.cuh)
    int n_jobs;
    int total_tiles;
    int max_radius;
    int padding;
};
ABI_SIZE(SiftTiledParams, 56);
ABI_OFFSET(SiftTiledParams, jobs, 0);
ABI_OFFSET(SiftTiledParams, frame, 8);
ABI_OFFSET(SiftTiledParams, pyramid, 16);
ABI_OFFSET(SiftTiledParams, taps, 24);
ABI_OFFSET(SiftTiledParams, rows_done, 32);
ABI_OFFSET(SiftTiledParams, n_jobs, 40);
ABI_OFFSET(SiftTiledParams, total_tiles, 44);
ABI_OFFSET(SiftTiledParams, max_radius, 48);
ABI_OFFSET(SiftTiledParams, padding, 52);

// The parameters of `sift_small_octaves` (kernels/sift/small_octaves.cu): its `n_jobs`
// levels in order, the largest `max_width` x `max_height` with radii up to `pad`, and the
// pipeline's tap table of `n_taps` floats.
struct SiftSmallOctavesParams {
    const BlurJob* jobs;
    float* pyramid;
    const float* taps;
    SiftCounters* counters;
    int n_jobs;
    int n_chain_jobs;  // jobs [0, n_chain_jobs): the chain; the rest: the tail
    int max_width;
    int max_height;
    int pad;
    int n_taps;
};
ABI_SIZE(SiftSmallOctavesParams, 56);
ABI_OFFSET(SiftSmallOctavesParams, jobs, 0);
ABI_OFFSET(SiftSmallOctavesParams, pyramid, 8);
ABI_OFFSET(SiftSmallOctavesParams, taps, 16);
ABI_OFFSET(SiftSmallOctavesParams, counters, 24);
ABI_OFFSET(SiftSmallOctavesParams, n_jobs, 32);
ABI_OFFSET(SiftSmallOctavesParams, n_chain_jobs, 36);
ABI_OFFSET(SiftSmallOctavesParams, max_width, 40);
ABI_OFFSET(SiftSmallOctavesParams, max_height, 44);
ABI_OFFSET(SiftSmallOctavesParams, pad, 48);
ABI_OFFSET(SiftSmallOctavesParams, n_taps, 52);

// Candidates of sift_extrema: integer position and packed octave and layer.
struct SiftCandidateArrays {
    int* x;
    int* y;
    int* octave_layer;
};
ABI_SIZE(SiftCandidateArrays, 24);
ABI_OFFSET(SiftCandidateArrays, x, 0);
ABI_OFFSET(SiftCandidateArrays, y, 8);
ABI_OFFSET(SiftCandidateArrays, octave_layer, 16);

// Extrema of sift_refine: sample, packed octave and layer, refined position, scale and
// response.
struct SiftExtremumArrays {
    int* col;
    int* row;
    int* octave_layer;
    float* x;
    float* y;
    float* scale;
    float* response;
};
ABI_SIZE(SiftExtremumArrays, 56);
ABI_OFFSET(SiftExtremumArrays, col, 0);
ABI_OFFSET(SiftExtremumArrays, row, 8);
ABI_OFFSET(SiftExtremumArrays, octave_layer, 16);
ABI_OFFSET(SiftExtremumArrays, x, 24);
ABI_OFFSET(SiftExtremumArrays, y, 32);
ABI_OFFSET(SiftExtremumArrays, scale, 40);
ABI_OFFSET(SiftExtremumArrays, response, 48);

// Oriented keypoints in input-pixel coordinates, before ranking (sift_orientation) or
// as output (sift_place, where `octave_layer` holds the octave as reported).
struct SiftKeypointArrays {
    float* x;
    float* y;
    float* size;
    float* angle;
    float* response;
    int* octave_layer;
};
ABI_SIZE(SiftKeypointArrays, 48);
ABI_OFFSET(SiftKeypointArrays, x, 0);
ABI_OFFSET(SiftKeypointArrays, y, 8);
ABI_OFFSET(SiftKeypointArrays, size, 16);
ABI_OFFSET(SiftKeypointArrays, angle, 24);
ABI_OFFSET(SiftKeypointArrays, response, 32);
ABI_OFFSET(SiftKeypointArrays, octave_layer, 40);

// The ranking's three counts per keypoint, zeroed each frame.
struct SiftRanks {
    unsigned int* less;          // keys below
    unsigned int* equal_before;  // equal keys at lower indices
    unsigned int* stronger;      // kept keypoints ranked above (with a budget)
};
ABI_SIZE(SiftRanks, 24);
ABI_OFFSET(SiftRanks, less, 0);
ABI_OFFSET(SiftRanks, equal_before, 8);
ABI_OFFSET(SiftRanks, stronger, 16);

// sift_extrema: octaves [octave_begin, octave_end) of the table; counts `candidates`.
struct SiftExtremaParams {
    const float* pyramid;
    const SiftOctave* octaves;
    SiftCounters* counters;
    SiftCandidateArrays candidates;
    int octave_begin;
    int octave_end;
    int n_layers;
    int capacity;  // of the candidate arrays
    float threshold;
    int padding;
};
ABI_SIZE(SiftExtremaParams, 72);
ABI_OFFSET(SiftExtremaParams, pyramid, 0);
ABI_OFFSET(SiftExtremaParams, octaves, 8);
ABI_OFFSET(SiftExtremaParams, counters, 16);
ABI_OFFSET(SiftExtremaParams, candidates, 24);
ABI_OFFSET(SiftExtremaParams, octave_begin, 48);
ABI_OFFSET(SiftExtremaParams, octave_end, 52);
ABI_OFFSET(SiftExtremaParams, n_layers, 56);
ABI_OFFSET(SiftExtremaParams, capacity, 60);
ABI_OFFSET(SiftExtremaParams, threshold, 64);
ABI_OFFSET(SiftExtremaParams, padding, 68);

// sift_refine: reads `candidates`, counts `extrema`.
struct SiftRefineParams {
    const float* pyramid;
    const SiftOctave* octaves;
    SiftCounters* counters;
    SiftCandidateArrays candidates;
    SiftExtremumArrays extrema;
    int n_layers;
    int candidate_capacity;
    int capacity;  // of the extremum arrays
    float contrast_threshold;
    float edge_threshold;
    float sigma;
};
ABI_SIZE(SiftRefineParams, 128);
ABI_OFFSET(SiftRefineParams, pyramid, 0);
ABI_OFFSET(SiftRefineParams, octaves, 8);
ABI_OFFSET(SiftRefineParams, counters, 16);
ABI_OFFSET(SiftRefineParams, candidates, 24);
ABI_OFFSET(SiftRefineParams, extrema, 48);
ABI_OFFSET(SiftRefineParams, n_layers, 104);
ABI_OFFSET(SiftRefineParams, candidate_capacity, 108);
ABI_OFFSET(SiftRefineParams, capacity, 112);
ABI_OFFSET(SiftRefineParams, contrast_threshold, 116);
ABI_OFFSET(SiftRefineParams, edge_threshold, 120);
ABI_OFFSET(SiftRefineParams, sigma, 124);

// sift_orientation: reads `extrema`, takes work from `orientation_queue`, counts
// `keypoints`.
struct SiftOrientationParams {
    const float* pyramid;
    const SiftOctave* octaves;
    SiftCounters* counters;
    SiftExtremumArrays extrema;
    SiftKeypointArrays keypoints;
    int first_octave;
    int layers;
    int extremum_capacity;
    int capacity;  // of the keypoint arrays
};
ABI_SIZE(SiftOrientationParams, 144);
ABI_OFFSET(SiftOrientationParams, pyramid, 0);
ABI_OFFSET(SiftOrientationParams, octaves, 8);
ABI_OFFSET(SiftOrientationParams, counters, 16);
ABI_OFFSET(SiftOrientationParams, extrema, 24);
ABI_OFFSET(SiftOrientationParams, keypoints, 80);
ABI_OFFSET(SiftOrientationParams, first_octave, 128);
ABI_OFFSET(SiftOrientationParams, layers, 132);
ABI_OFFSET(SiftOrientationParams, extremum_capacity, 136);
ABI_OFFSET(SiftOrientationParams, capacity, 140);

// sift_rank_keys: reads `keypoints` (x, y, size, angle), counts `duplicates`.
struct SiftRankKeysParams {
    SiftCounters* counters;
    SiftKeypointArrays keypoints;
    SiftRanks ranks;  // adds to less and equal_before
    int* duplicates;  // the duplicates' indices
    int capacity;     // of the keypoint arrays
    int padding;
};
ABI_SIZE(SiftRankKeysParams, 96);
ABI_OFFSET(SiftRankKeysParams, counters, 0);
ABI_OFFSET(SiftRankKeysParams, keypoints, 8);
ABI_OFFSET(SiftRankKeysParams, ranks, 56);
ABI_OFFSET(SiftRankKeysParams, duplicates, 80);
ABI_OFFSET(SiftRankKeysParams, capacity, 88);
ABI_OFFSET(SiftRankKeysParams, padding, 92);

// sift_rank_responses: reads `keypoints` and `duplicates`.
struct SiftRankResponsesParams {
    const SiftCounters* counters;
    SiftKeypointArrays keypoints;  // x, y, size, angle, response read
    SiftRanks ranks;               // reads equal_before, adds to stronger
    int capacity;
    int max_features;
};
ABI_SIZE(SiftRankResponsesParams, 88);
ABI_OFFSET(SiftRankResponsesParams, counters, 0);
ABI_OFFSET(SiftRankResponsesParams, keypoints, 8);
ABI_OFFSET(SiftRankResponsesParams, ranks, 56);
ABI_OFFSET(SiftRankResponsesParams, capacity, 80);
ABI_OFFSET(SiftRankResponsesParams, max_features, 84);

// sift_place: the kept keypoints at their places.
struct SiftPlaceParams {
    const SiftCounters* counters;
    const int* duplicates;
    SiftKeypointArrays keypoints;
    SiftRanks ranks;
    // SUMMARY_WORDS: the kept count, then the first four counters.
    unsigned int* summary;
    SiftKeypointArrays outputs;
    int* out_octave_layer;  // packed, for sift_describe
    int capacity;
    int max_features;
    int first_octave;
    int padding;
};
ABI_SIZE(SiftPlaceParams, 168);
ABI_OFFSET(SiftPlaceParams, counters, 0);
ABI_OFFSET(SiftPlaceParams, duplicates, 8);
ABI_OFFSET(SiftPlaceParams, keypoints, 16);
ABI_OFFSET(SiftPlaceParams, ranks, 64);
ABI_OFFSET(SiftPlaceParams, summary, 88);
ABI_OFFSET(SiftPlaceParams, outputs, 96);
ABI_OFFSET(SiftPlaceParams, out_octave_layer, 144);
ABI_OFFSET(SiftPlaceParams, capacity, 152);
ABI_OFFSET(SiftPlaceParams, max_features, 156);
ABI_OFFSET(SiftPlaceParams, first_octave, 160);
ABI_OFFSET(SiftPlaceParams, padding, 164);

// sift_describe: takes work from `describe_queue`.
struct SiftDescribeParams {
    const float* pyramid;
    const SiftOctave* octaves;
    SiftCounters* counters;
    const unsigned int* out_count;  // the summary's kept count
    SiftKeypointArrays outputs;     // x, y, size, angle read
    const int* out_octave_layer;
    unsigned int* descriptors;      // 128 bytes each
    int first_octave;
    int layers;
    int root_sift;
    int padding;
};
ABI_SIZE(SiftDescribeParams, 112);
ABI_OFFSET(SiftDescribeParams, pyramid, 0);
ABI_OFFSET(SiftDescribeParams, octaves, 8);
ABI_OFFSET(SiftDescribeParams, counters, 16);
ABI_OFFSET(SiftDescribeParams, out_count, 24);
ABI_OFFSET(SiftDescribeParams, outputs, 32);
ABI_OFFSET(SiftDescribeParams, out_octave_layer, 80);
ABI_OFFSET(SiftDescribeParams, descriptors, 88);
ABI_OFFSET(SiftDescribeParams, first_octave, 96);
ABI_OFFSET(SiftDescribeParams, layers, 100);
ABI_OFFSET(SiftDescribeParams, root_sift, 104);
ABI_OFFSET(SiftDescribeParams, padding, 108);
