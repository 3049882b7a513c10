// The parameters of image_to_gray (kernels/image/gray.cu), mirrored in
// src/cuda/abi/image_params.rs: change both together (the ABI_ checks tell a mismatch).
#pragma once

#include "common/abi.cuh"

struct GrayParams {
    const unsigned char* frame;  // as published: rows `step` bytes apart
    unsigned char* gray;         // packed: rows `width` bytes apart
    int width;
    int first_row;               // the rows converted: first_row .. end_row - 1
    int end_row;
    int step;
    int bytes_per_pixel;
    int rule;                    // GRAY_RULE_*
    int first;                   // BYTE: the byte at `first`; LUMA: red at `first`
    int green;
    int blue;
    int padding;
};
ABI_SIZE(GrayParams, 56);
ABI_OFFSET(GrayParams, frame, 0);
ABI_OFFSET(GrayParams, gray, 8);
ABI_OFFSET(GrayParams, width, 16);
ABI_OFFSET(GrayParams, first_row, 20);
ABI_OFFSET(GrayParams, end_row, 24);
ABI_OFFSET(GrayParams, step, 28);
ABI_OFFSET(GrayParams, bytes_per_pixel, 32);
ABI_OFFSET(GrayParams, rule, 36);
ABI_OFFSET(GrayParams, first, 40);
ABI_OFFSET(GrayParams, green, 44);
ABI_OFFSET(GrayParams, blue, 48);
ABI_OFFSET(GrayParams, padding, 52);
