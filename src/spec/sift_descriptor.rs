//! The shape of SIFT's 4x4x8 descriptor (docs/sift-reference.md section 5): the CPU
//! reference (`cpu::sift::descriptor`) fills these bins, and the CUDA kernel
//! (kernels/sift/describe.cu) takes the same numbers as `-D` defines (`cuda::abi`).

/// Spatial bins along each side of the rotated window.
pub const SPATIAL_BINS: usize = 4;
/// Orientation bins of each spatial bin.
pub const ORIENTATION_BINS: usize = 8;
/// Values of a descriptor (128), one byte each once quantised.
pub const LENGTH: usize = SPATIAL_BINS * SPATIAL_BINS * ORIENTATION_BINS;
