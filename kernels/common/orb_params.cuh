// The parameters of the ORB kernels (kernels/orb/*.cu), one struct per kernel, and the
// structure-of-arrays views several of them share. Mirrored in
// src/cuda/abi/orb_params.rs: change both together (the ABI_ checks tell a mismatch).
// Candidates and records sit at each level's first slot (OrbLevel::cand_offset).
#pragma once

#include "common/abi.cuh"
#include "common/levels.cuh"

struct ResizeTap;  // kernels/orb/pyramid.cu

// The per-frame counters, zeroed each frame, within one buffer.
struct OrbCounters {
    unsigned int* level_counts;      // candidates per level
    unsigned int* score_histograms;  // per level ORB_SCORE_BINS bins of the FAST score
    unsigned int* rank_bins;         // per level RANK_BINS bins of the records' ranks k
};
ABI_SIZE(OrbCounters, 24);
ABI_OFFSET(OrbCounters, level_counts, 0);
ABI_OFFSET(OrbCounters, score_histograms, 8);
ABI_OFFSET(OrbCounters, rank_bins, 16);

// The NMS survivors of every cell.
struct OrbCandidateArrays {
    unsigned int* yx;      // y << 16 | x
    int* cell;             // cell within the level
    long long* key;        // the FAST ranking key (the Harris key goes to the records)
    unsigned char* score;  // FAST score s
};
ABI_SIZE(OrbCandidateArrays, 32);
ABI_OFFSET(OrbCandidateArrays, yx, 0);
ABI_OFFSET(OrbCandidateArrays, cell, 8);
ABI_OFFSET(OrbCandidateArrays, key, 16);
ABI_OFFSET(OrbCandidateArrays, score, 24);

// The selection records.
struct OrbRecordArrays {
    long long* key;      // the ranking key: FAST or Harris
    unsigned int* yx;
    unsigned int* cell;
    unsigned int* rank;      // rank k within the cell
    unsigned int* bin_slot;  // order within the level's bin of k (any order)
};
ABI_SIZE(OrbRecordArrays, 40);
ABI_OFFSET(OrbRecordArrays, key, 0);
ABI_OFFSET(OrbRecordArrays, yx, 8);
ABI_OFFSET(OrbRecordArrays, cell, 16);
ABI_OFFSET(OrbRecordArrays, rank, 24);
ABI_OFFSET(OrbRecordArrays, bin_slot, 32);

// The kept keypoints, in output order.
struct OrbKeypointArrays {
    unsigned int* yx;
    int* level;
    long long* key;
};
ABI_SIZE(OrbKeypointArrays, 24);
ABI_OFFSET(OrbKeypointArrays, yx, 0);
ABI_OFFSET(OrbKeypointArrays, level, 8);
ABI_OFFSET(OrbKeypointArrays, key, 16);

// The descriptors' 7x7 smoothing taps packed as bytes (each is under 256;
// src/cuda/orb/shapes.rs packs them): `taps_0123` = w0..w3, `taps_456` = w4, w5, w6, 0,
// `taps_x012` = 0, w0, w1, w2, `taps_3456` = w3..w6, the operands of orb_fast_score's
// byte dot products.
struct SmoothTaps {
    unsigned int taps_0123;
    unsigned int taps_456;
    unsigned int taps_x012;
    unsigned int taps_3456;
};
ABI_SIZE(SmoothTaps, 16);
ABI_OFFSET(SmoothTaps, taps_0123, 0);
ABI_OFFSET(SmoothTaps, taps_456, 4);
ABI_OFFSET(SmoothTaps, taps_x012, 8);
ABI_OFFSET(SmoothTaps, taps_3456, 12);

// orb_pyramid: the rows `rows` of levels 1.. resized from the level before.
struct OrbPyramidParams {
    const OrbLevel* level_table;
    const ResizeTap* taps;
    unsigned char* pyramid;       // every level, packed; level 0 holds the frame
    unsigned int* barrier_state;  // common/grid_barrier.cuh
    OrbRows rows;                 // pixel rows
    int n_levels;
    int padding;
};
ABI_SIZE(OrbPyramidParams, 296);
ABI_OFFSET(OrbPyramidParams, level_table, 0);
ABI_OFFSET(OrbPyramidParams, taps, 8);
ABI_OFFSET(OrbPyramidParams, pyramid, 16);
ABI_OFFSET(OrbPyramidParams, barrier_state, 24);
ABI_OFFSET(OrbPyramidParams, rows, 32);
ABI_OFFSET(OrbPyramidParams, n_levels, 288);
ABI_OFFSET(OrbPyramidParams, padding, 292);

// orb_fast_score: FAST scores, the corner bitmap and the smoothed image of the tiles
// in `rows`.
struct OrbFastScoreParams {
    const unsigned char* pyramid;
    const OrbLevel* level_table;
    const unsigned int* arc_bits;  // the 65,536-bit arc table, where the masks decide (common/fast_ring.cuh)
    unsigned char* scores;
    unsigned int* corner_bits;     // a bit per corner at `threshold` that may survive NMS
    unsigned char* smoothed;       // same layout as `pyramid`
    SmoothTaps taps;
    OrbRows rows;                  // tile rows
    int n_levels;
    int threshold;
    unsigned int* tiles_taken;     // the launch's queue: tiles taken past the first of each block (zeroed)
};
ABI_SIZE(OrbFastScoreParams, 336);
ABI_OFFSET(OrbFastScoreParams, pyramid, 0);
ABI_OFFSET(OrbFastScoreParams, level_table, 8);
ABI_OFFSET(OrbFastScoreParams, arc_bits, 16);
ABI_OFFSET(OrbFastScoreParams, scores, 24);
ABI_OFFSET(OrbFastScoreParams, corner_bits, 32);
ABI_OFFSET(OrbFastScoreParams, smoothed, 40);
ABI_OFFSET(OrbFastScoreParams, taps, 48);
ABI_OFFSET(OrbFastScoreParams, rows, 64);
ABI_OFFSET(OrbFastScoreParams, n_levels, 320);
ABI_OFFSET(OrbFastScoreParams, threshold, 324);
ABI_OFFSET(OrbFastScoreParams, tiles_taken, 328);

// orb_cell_candidates: the NMS survivors of each cell in `rows`.
struct OrbCellCandidatesParams {
    const unsigned char* scores;
    const unsigned int* corner_bits;  // orb_fast_score's bitmap
    const OrbLevel* level_table;
    OrbCounters counters;             // level counts and score histograms start at 0
    unsigned int* cell_starts;        // first slot of each cell's members
    unsigned int* cell_counts;        // members of each cell
    OrbCandidateArrays candidates;
    OrbRows rows;                     // cell rows
    int n_levels;
    int fast_threshold;
    int min_fast_threshold;
    int harris;
};
ABI_SIZE(OrbCellCandidatesParams, 368);
ABI_OFFSET(OrbCellCandidatesParams, scores, 0);
ABI_OFFSET(OrbCellCandidatesParams, corner_bits, 8);
ABI_OFFSET(OrbCellCandidatesParams, level_table, 16);
ABI_OFFSET(OrbCellCandidatesParams, counters, 24);
ABI_OFFSET(OrbCellCandidatesParams, cell_starts, 48);
ABI_OFFSET(OrbCellCandidatesParams, cell_counts, 56);
ABI_OFFSET(OrbCellCandidatesParams, candidates, 64);
ABI_OFFSET(OrbCellCandidatesParams, rows, 96);
ABI_OFFSET(OrbCellCandidatesParams, n_levels, 352);
ABI_OFFSET(OrbCellCandidatesParams, fast_threshold, 356);
ABI_OFFSET(OrbCellCandidatesParams, min_fast_threshold, 360);
ABI_OFFSET(OrbCellCandidatesParams, harris, 364);

// orb_select_candidates: each level's records.
struct OrbSelectCandidatesParams {
    const OrbLevel* level_table;
    OrbCounters counters;
    const int* quotas;
    OrbCandidateArrays candidates;  // the key is read when !harris
    OrbRecordArrays records;        // key, yx and cell written
    unsigned int* level_records;    // records per level
    int n_levels;
    int harris;
};
ABI_SIZE(OrbSelectCandidatesParams, 128);
ABI_OFFSET(OrbSelectCandidatesParams, level_table, 0);
ABI_OFFSET(OrbSelectCandidatesParams, counters, 8);
ABI_OFFSET(OrbSelectCandidatesParams, quotas, 32);
ABI_OFFSET(OrbSelectCandidatesParams, candidates, 40);
ABI_OFFSET(OrbSelectCandidatesParams, records, 72);
ABI_OFFSET(OrbSelectCandidatesParams, level_records, 112);
ABI_OFFSET(OrbSelectCandidatesParams, n_levels, 120);
ABI_OFFSET(OrbSelectCandidatesParams, harris, 124);

// The records of every level, as orb_select_candidates left them: the level table
// and each level's record count index the record arrays.
struct OrbRecordSet {
    const OrbLevel* level_table;
    const unsigned int* level_records;
    OrbRecordArrays records;
    int n_levels;
    int padding;
};
ABI_SIZE(OrbRecordSet, 64);
ABI_OFFSET(OrbRecordSet, level_table, 0);
ABI_OFFSET(OrbRecordSet, level_records, 8);
ABI_OFFSET(OrbRecordSet, records, 16);
ABI_OFFSET(OrbRecordSet, n_levels, 56);
ABI_OFFSET(OrbRecordSet, padding, 60);

// orb_record_keys: the records' Harris keys.
struct OrbRecordKeysParams {
    const unsigned char* pyramid;
    OrbRecordSet set;  // yx read, key written
};
ABI_SIZE(OrbRecordKeysParams, 72);
ABI_OFFSET(OrbRecordKeysParams, pyramid, 0);
ABI_OFFSET(OrbRecordKeysParams, set, 8);

// orb_record_ranks: each record's rank in its cell and its slot in its bin of ranks.
struct OrbRecordRanksParams {
    OrbRecordSet set;         // key, yx and cell read, rank and bin_slot written
    unsigned int* rank_bins;  // OrbCounters::rank_bins, counted
};
ABI_SIZE(OrbRecordRanksParams, 72);
ABI_OFFSET(OrbRecordRanksParams, set, 0);
ABI_OFFSET(OrbRecordRanksParams, rank_bins, 64);

// orb_record_place: the kept keypoints, in output order.
struct OrbRecordPlaceParams {
    const OrbLevel* level_table;
    OrbCounters counters;            // level_counts and rank_bins read
    const int* quotas;
    const unsigned int* level_records;
    OrbRecordArrays records;         // key, yx, rank and bin_slot read
    unsigned int* kept;              // n_levels + 1: kept per level, then the total
    OrbKeypointArrays keypoints;
    int n_levels;
    int padding;
};
ABI_SIZE(OrbRecordPlaceParams, 128);
ABI_OFFSET(OrbRecordPlaceParams, level_table, 0);
ABI_OFFSET(OrbRecordPlaceParams, counters, 8);
ABI_OFFSET(OrbRecordPlaceParams, quotas, 32);
ABI_OFFSET(OrbRecordPlaceParams, level_records, 40);
ABI_OFFSET(OrbRecordPlaceParams, records, 48);
ABI_OFFSET(OrbRecordPlaceParams, kept, 88);
ABI_OFFSET(OrbRecordPlaceParams, keypoints, 96);
ABI_OFFSET(OrbRecordPlaceParams, n_levels, 120);
ABI_OFFSET(OrbRecordPlaceParams, padding, 124);

// orb_describe: orientation, rBRIEF and the fused match.
struct OrbDescribeParams {
    const unsigned char* pyramid;
    const unsigned char* smoothed;
    const OrbLevel* level_table;
    const int* umax;                  // 16 entries: half-width of row v of the circle
    const char4* pattern;             // 256 tests (x1, y1, x2, y2)
    const unsigned int* kept;         // [n_levels] = keypoints to describe
    OrbKeypointArrays keypoints;      // yx and level read
    int2* moments;                    // (m10, m01) per keypoint
    unsigned int* descriptors;        // DESC_WORDS words per keypoint
    const unsigned int* train;        // resident train set (DESC_WORDS words each) or null
    // Its size, read here: a graph replays for every count a resident set takes.
    const unsigned int* train_count;
    int3* matches;                    // (best index, best, second best) per keypoint
    // Or null: per train descriptor, its nearest keypoint as `distance <<
    // BACKWARD_QUERY_BITS | keypoint` (common/hamming.cuh), atomicMin-ed into all ones.
    unsigned int* backward_best;
    int n_levels;
    int per_block;                    // keypoints per block, at most 32
};
ABI_SIZE(OrbDescribeParams, 128);
ABI_OFFSET(OrbDescribeParams, pyramid, 0);
ABI_OFFSET(OrbDescribeParams, smoothed, 8);
ABI_OFFSET(OrbDescribeParams, level_table, 16);
ABI_OFFSET(OrbDescribeParams, umax, 24);
ABI_OFFSET(OrbDescribeParams, pattern, 32);
ABI_OFFSET(OrbDescribeParams, kept, 40);
ABI_OFFSET(OrbDescribeParams, keypoints, 48);
ABI_OFFSET(OrbDescribeParams, moments, 72);
ABI_OFFSET(OrbDescribeParams, descriptors, 80);
ABI_OFFSET(OrbDescribeParams, train, 88);
ABI_OFFSET(OrbDescribeParams, train_count, 96);
ABI_OFFSET(OrbDescribeParams, matches, 104);
ABI_OFFSET(OrbDescribeParams, backward_best, 112);
ABI_OFFSET(OrbDescribeParams, n_levels, 120);
ABI_OFFSET(OrbDescribeParams, per_block, 124);

// The fields a Features message publishes per keypoint.
struct OrbFeatureArrays {
    float* x;
    float* y;
    float* size;
    float* angle;  // NaN where the host decides (orb_keypoint_fields)
    float* response;
    int* octave;
};
ABI_SIZE(OrbFeatureArrays, 48);
ABI_OFFSET(OrbFeatureArrays, x, 0);
ABI_OFFSET(OrbFeatureArrays, y, 8);
ABI_OFFSET(OrbFeatureArrays, size, 16);
ABI_OFFSET(OrbFeatureArrays, angle, 24);
ABI_OFFSET(OrbFeatureArrays, response, 32);
ABI_OFFSET(OrbFeatureArrays, octave, 40);

// orb_keypoint_fields: the kept keypoints' published fields.
struct OrbKeypointFieldsParams {
    const unsigned int* kept;      // [n_levels] = keypoints kept
    OrbKeypointArrays keypoints;   // yx, level and key read
    const int2* moments;           // (m10, m01) per keypoint
    const float* level_scales;     // per level: the frame pixels of one level pixel
    OrbFeatureArrays fields;
    double degrees_per_radian;     // the host's 180 / pi
    double harris_scale;           // response per unit of the Harris key
    float patch_size;
    int harris;                    // 1: the key is Harris's, else FAST's
    int n_levels;
    int padding;
};
ABI_SIZE(OrbKeypointFieldsParams, 128);
ABI_OFFSET(OrbKeypointFieldsParams, kept, 0);
ABI_OFFSET(OrbKeypointFieldsParams, keypoints, 8);
ABI_OFFSET(OrbKeypointFieldsParams, moments, 32);
ABI_OFFSET(OrbKeypointFieldsParams, level_scales, 40);
ABI_OFFSET(OrbKeypointFieldsParams, fields, 48);
ABI_OFFSET(OrbKeypointFieldsParams, degrees_per_radian, 96);
ABI_OFFSET(OrbKeypointFieldsParams, harris_scale, 104);
ABI_OFFSET(OrbKeypointFieldsParams, patch_size, 112);
ABI_OFFSET(OrbKeypointFieldsParams, harris, 116);
ABI_OFFSET(OrbKeypointFieldsParams, n_levels, 120);
ABI_OFFSET(OrbKeypointFieldsParams, padding, 124);
