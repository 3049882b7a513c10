// Camera pixels to 8-bit grey, the rule of `Encoding::layout` in src/image.rs, bit for
// bit: either one byte of each pixel (mono, the Y of YUV) or BT.601 luma in OpenCV's
// 14-bit fixed point. The frame arrives as it was published (rows `step` bytes apart);
// the grey image is packed (rows `width` bytes apart).
#include "common/image_params.cuh"

// `GRAY_RULE_*`: how `image_to_gray` makes a grey value; `GrayRule` in src/image.rs.
#define GRAY_RULE_BYTE 0
#define GRAY_RULE_LUMA 1

extern "C" __global__ void image_to_gray(const GrayParams p) {
    // In a kernel this simple, NVVM proves the frame read-only from __restrict__ copies
    // of the parameters' pointers.
    const unsigned char* __restrict__ frame = p.frame;
    unsigned char* __restrict__ gray = p.gray;
    const long long end = (long long)p.width * p.end_row;
    for (long long i = (long long)p.width * p.first_row + blockIdx.x * (long long)blockDim.x + threadIdx.x; i < end;
         i += (long long)gridDim.x * blockDim.x) {
        const int y = (int)(i / p.width);
        const int x = (int)(i - (long long)y * p.width);
        const unsigned char* pixel = frame + (long long)y * p.step + (long long)x * p.bytes_per_pixel;
        unsigned int value;
        if (p.rule == GRAY_RULE_LUMA) {
            value = (4899u * pixel[p.first] + 9617u * pixel[p.green] + 1868u * pixel[p.blue] + 8192u) >> 14;
        } else {
            value = pixel[p.first];
        }
        gray[i] = (unsigned char)value;
    }
}
