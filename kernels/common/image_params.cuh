// The parameters of image_to_gray (kernels/image/gray.cu), mirrored in
// src/cuda/abi/image_params.rs: change both together (the ABI_ checks tell a mismatch).
#pragma once

#include "common/abi.cuh"

struct GrayParams {
    const unsigned char* frame;  // as published: rows `step` bytes apart
    unsigned char* gray;         // packed: rows `width` bytes apart
    int width;
    int height;
    int step;
    int bytes_per_pixel;
    int rule;                    // GRAY_RULE_*
    int first;                   // BYTE: the byte at `first`; LUMA: red at `first`
    int green;
    int blue;
};
ABI_SIZE(GrayParams, 48);
ABI_OFFSET(GrayParams, frame, 0);
ABI_OFFSET(GrayParams, gray, 8);
ABI_OFFSET(GrayParams, width, 16);
ABI_OFFSET(GrayParams, height, 20);
ABI_OFFSET(GrayParams, step, 24);
ABI_OFFSET(GrayParams, bytes_per_pixel, 28);
ABI_OFFSET(GrayParams, rule, 32);
ABI_OFFSET(GrayParams, first, 36);
ABI_OFFSET(GrayParams, green, 40);
ABI_OFFSET(GrayParams, blue, 44);
