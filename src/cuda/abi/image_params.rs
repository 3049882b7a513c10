//! The parameters of `image_to_gray` (kernels/common/image_params.cuh).

use cudarc::driver::sys::CUdeviceptr;

/// `image_to_gray`: camera pixels to the packed grey image.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GrayParams {
    /// The frame as published: rows `step` bytes apart.
    pub frame: CUdeviceptr,
    /// Packed: rows `width` bytes apart.
    pub gray: CUdeviceptr,
    pub width: i32,
    /// The rows converted: `first_row..end_row`.
    pub first_row: i32,
    pub end_row: i32,
    pub step: i32,
    pub bytes_per_pixel: i32,
    /// `GRAY_RULE_*` of kernels/image/gray.cu.
    pub rule: i32,
    /// Byte rule: the byte at `first`; luma: red at `first`.
    pub first: i32,
    pub green: i32,
    pub blue: i32,
    pub padding: i32,
}

kernel_params!(GrayParams);

#[cfg(test)]
pub(super) fn layouts() -> Vec<super::layout::Layout> {
    use super::layout::layout;
    vec![layout!(GrayParams {
        frame,
        gray,
        width,
        first_row,
        end_row,
        step,
        bytes_per_pixel,
        rule,
        first,
        green,
        blue,
        padding,
    })]
}
