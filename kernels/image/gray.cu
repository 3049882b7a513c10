// Camera pixels to 8-bit grey, the rule of `Encoding::layout` in src/image.rs, bit for
// bit: either one byte of each pixel (mono, the Y of YUV) or BT.601 luma in OpenCV's
// 14-bit fixed point. The frame arrives as it was published (rows `step` bytes apart);
// the grey image is packed (rows `width` bytes apart).

// `GRAY_RULE_*`: how `image_to_gray` makes a grey value; `GrayRule` in src/image.rs.
#define GRAY_RULE_BYTE 0
#define GRAY_RULE_LUMA 1

extern "C" __global__ void image_to_gray(
    const unsigned char* __restrict__ frame, int width, int height, int step,
    int bytes_per_pixel, int rule,
    int first, int green, int blue,   // BYTE: the byte at `first`; LUMA: red at `first`
    unsigned char* __restrict__ gray) {
    const long long pixels = (long long)width * height;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < pixels;
         i += (long long)gridDim.x * blockDim.x) {
        const int y = (int)(i / width);
        const int x = (int)(i - (long long)y * width);
        const unsigned char* p = frame + (long long)y * step + (long long)x * bytes_per_pixel;
        unsigned int value;
        if (rule == GRAY_RULE_LUMA) {
            value = (4899u * p[first] + 9617u * p[green] + 1868u * p[blue] + 8192u) >> 14;
        } else {
            value = p[first];
        }
        gray[i] = (unsigned char)value;
    }
}
