//! The first kernel of a frame: camera pixels, uploaded as they arrived, to 8-bit grey
//! on the GPU (kernels/image/gray.cu), by the rule `Encoding::layout` gives the CPU.

use std::ops::Range;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, LaunchConfig};

use crate::cuda::abi::image_params::GrayParams;
use crate::cuda::gpu::Gpu;
use crate::cuda::kernel::Kernel;
use crate::error::{Error, ImageError, Result};
use crate::image::{Encoding, GrayRule, PixelLayout, RawFrame};

const THREADS: u32 = 256;

/// Keypoint positions are packed as 16-bit x and y on the GPU.
pub fn check_gpu_size(width: usize, height: usize) -> Result<()> {
    if width > 0xffff || height > 0xffff {
        return Err(Error::Image(ImageError::Invalid(format!(
            "{width}x{height} is larger than the CUDA backend's 65535 pixels a side"
        ))));
    }
    Ok(())
}

/// How a frame's bytes sit in its upload buffer: everything the kernel needs to find
/// each pixel's grey value, and what a buffer for such frames must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLayout {
    pub encoding: Encoding,
    pub big_endian: bool,
    pub width: usize,
    pub height: usize,
    pub step: usize,
}

impl FrameLayout {
    /// The layout of `frame`, once it is known to hold all its rows.
    pub fn of(frame: &RawFrame<'_>) -> Result<Self> {
        frame.validate()?;
        check_gpu_size(frame.width, frame.height)?;
        let layout = Self {
            encoding: frame.encoding,
            big_endian: frame.big_endian,
            width: frame.width,
            height: frame.height,
            step: frame.step,
        };
        // The kernel indexes rows with i32 steps.
        i32::try_from(frame.step).map_err(|_| {
            Error::Image(ImageError::Invalid(format!(
                "step {} is too large for the GPU",
                frame.step
            )))
        })?;
        Ok(layout)
    }

    /// The layout of a little-endian frame with rows `step` bytes apart.
    #[cfg(test)]
    pub fn with_step(encoding: Encoding, width: usize, height: usize, step: usize) -> Self {
        Self {
            encoding,
            big_endian: false,
            width,
            height,
            step,
        }
    }

    /// Whether the frame is already the packed 8-bit grey image the kernels read.
    pub fn is_packed_grey(&self) -> bool {
        self.encoding == Encoding::Mono8 && self.step == self.width
    }

    /// The bytes of the frame's rows `rows` that hold their grey values (the whole
    /// step between rows, the last row up to its last pixel).
    pub fn row_bytes(&self, rows: Range<usize>) -> Range<usize> {
        if rows.is_empty() {
            return 0..0;
        }
        let row = self.width * self.encoding.bytes_per_pixel();
        rows.start * self.step..(rows.end - 1) * self.step + row
    }

    /// The bytes of a frame that hold its grey values: its rows up to the last pixel.
    /// The chroma plane of planar encodings is never uploaded.
    pub fn upload_bytes(&self) -> usize {
        self.row_bytes(0..self.height).end
    }
}

/// The conversion kernel, looked up once, and the blocks that keep the GPU's SMs busy.
pub struct GrayKernel {
    kernel: Kernel,
    blocks: u32,
}

impl GrayKernel {
    pub fn load(gpu: &Gpu) -> Result<Self> {
        let kernel = Kernel::load(gpu, "image_gray", "image_to_gray")?;
        let blocks = kernel.persistent_blocks(gpu, THREADS)?;
        Ok(Self { kernel, blocks })
    }

    /// Queues the conversion of the rows `rows` of the frame at `frame` (laid out as
    /// `layout`) into the same rows of the packed grey image at `gray`, on `stream`.
    ///
    /// # Safety
    /// `frame` must hold `layout.upload_bytes()` bytes and `gray` width x height bytes,
    /// both alive until the stream has run the kernel; `rows` lie within the height.
    pub unsafe fn enqueue(
        &self,
        stream: &CudaStream,
        layout: &FrameLayout,
        rows: Range<usize>,
        frame: CUdeviceptr,
        gray: CUdeviceptr,
    ) -> Result<()> {
        let PixelLayout {
            bytes_per_pixel,
            rule,
        } = layout.encoding.layout(layout.big_endian);
        let (kind, first, green, blue) = match rule {
            GrayRule::Byte(offset) => (0, offset, 0, 0),
            GrayRule::Luma { red, green, blue } => (1, red, green, blue),
        };
        let pixels = (layout.width * rows.len()) as u64;
        let needed = u32::try_from(pixels.div_ceil(u64::from(THREADS))).unwrap_or(u32::MAX);
        let config = LaunchConfig {
            grid_dim: (needed.clamp(1, self.blocks.max(1)), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let params = GrayParams {
            frame,
            gray,
            width: layout.width as i32,
            first_row: rows.start as i32,
            end_row: rows.end as i32,
            step: layout.step as i32,
            bytes_per_pixel: bytes_per_pixel as i32,
            rule: kind,
            first: first as i32,
            green: green as i32,
            blue: blue as i32,
            padding: 0,
        };
        // SAFETY: `params` is `image_to_gray`'s parameter struct; the kernel reads the
        // frame's rows `rows` as `layout` lays them out and writes their grey bytes,
        // the sizes the caller guarantees, alive until the stream has run it.
        unsafe { self.kernel.launch(stream, config, &params) }
    }
}
