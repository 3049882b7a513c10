//! A frame on its way to the GPU as it arrived, in any camera encoding: a buffer sized
//! by the frame's layout ([`FrameLayout::upload_bytes`]), the copy of the frame into
//! its pinned host side, and its upload. The frame's first kernel ([`GrayKernel`])
//! reads it and writes the grey image the extractor works on; a frame that already is
//! that image (packed mono8) can be uploaded into the start of a larger device buffer
//! that the kernels read in place (ORB's pyramid, [`FrameUpload::at_start_of`]).
//!
//! [`GrayKernel`]: crate::cuda::gray::GrayKernel

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaStream};

use crate::cuda::gray::FrameLayout;
use crate::cuda::memory::Staged;
use crate::error::{Error, ImageError, Result};
use crate::frame_memory::PageLockedBytes;
use crate::image::RawFrame;

/// The least a thread copies into pinned memory: below it, waking a thread costs
/// more than it saves.
const MIN_COPY_CHUNK: usize = 64 * 1024;

/// The upload buffer of frames of one layout: mapped host memory the kernels read in
/// place (`unified`), or pinned host memory and a device buffer (`device`).
pub struct FrameUpload {
    buffer: Staged,
    layout: FrameLayout,
    /// The frame to upload when it was decoded into page-locked memory: uploaded from
    /// there, and held until this buffer takes its next frame (by then its upload has
    /// been waited for).
    decoded: Option<PageLockedBytes>,
}

impl FrameUpload {
    pub fn new(ctx: &Arc<CudaContext>, layout: FrameLayout, unified: bool) -> Result<Self> {
        Self::at_start_of(ctx, layout, layout.upload_bytes(), unified)
    }

    /// An upload into the start of a device buffer of `device_bytes` (in device memory):
    /// a frame that is the first part of what the kernels read, such as level 0 of a
    /// pyramid.
    pub fn at_start_of(
        ctx: &Arc<CudaContext>,
        layout: FrameLayout,
        device_bytes: usize,
        unified: bool,
    ) -> Result<Self> {
        Ok(Self {
            buffer: Staged::with_device_bytes(ctx, layout.upload_bytes(), device_bytes, unified)?,
            layout,
            decoded: None,
        })
    }

    /// The layout of the frames this buffer takes.
    pub fn layout(&self) -> &FrameLayout {
        &self.layout
    }

    /// Where the kernels read the frame.
    pub fn ptr(&self) -> CUdeviceptr {
        self.buffer.ptr
    }

    /// Takes `frame` for the next upload: where it was decoded into page-locked memory
    /// and the device has its own buffer, from there; otherwise its bytes that hold
    /// grey values are copied into the pinned host side, split evenly over the
    /// threads (the copy is on every frame's critical path, and a single core does not
    /// reach the memory bandwidth).
    pub fn take(&mut self, frame: &RawFrame<'_>) -> Result<()> {
        use rayon::prelude::*;
        let bytes = self.layout.upload_bytes();
        let l = &self.layout;
        let fits = (
            frame.encoding,
            frame.big_endian,
            frame.width,
            frame.height,
            frame.step,
        ) == (l.encoding, l.big_endian, l.width, l.height, l.step)
            && frame.data.len() >= bytes;
        if !fits {
            return Err(Error::Image(ImageError::Invalid(format!(
                "a {}x{} {} frame of step {} does not fit the upload buffer of {}x{} {} frames of step {}",
                frame.width,
                frame.height,
                frame.encoding.name(),
                frame.step,
                l.width,
                l.height,
                l.encoding.name(),
                l.step
            ))));
        }
        self.decoded = frame
            .page_locked
            .filter(|block| {
                !self.buffer.is_mapped() && block.as_slice().as_ptr() == frame.data.as_ptr()
            })
            .cloned();
        if self.decoded.is_some() {
            return Ok(());
        }
        let (to, from) = (
            &mut self.buffer.host.as_mut_slice()[..bytes],
            &frame.data[..bytes],
        );
        let pieces = rayon::current_num_threads()
            .min(bytes / MIN_COPY_CHUNK)
            .max(1);
        let chunk = bytes.div_ceil(pieces);
        to.par_chunks_mut(chunk)
            .zip(from.par_chunks(chunk))
            .for_each(|(to, from)| to.copy_from_slice(from));
        Ok(())
    }

    /// Queues the upload of the frame taken last on `stream` (nothing to do when mapped).
    pub fn upload_async(&self, stream: &CudaStream) -> Result<()> {
        self.upload_rows_async(0..self.layout.height, stream)
    }

    /// Queues the upload of the rows `rows` of the frame taken last on `stream`
    /// (nothing to do when mapped).
    pub fn upload_rows_async(&self, rows: Range<usize>, stream: &CudaStream) -> Result<()> {
        let bytes = self.layout.row_bytes(rows);
        let source = match &self.decoded {
            Some(block) => &block.as_slice()[bytes.clone()],
            None => &self.buffer.host.as_slice()[bytes.clone()],
        };
        // SAFETY: both sources are page-locked and unchanged until the copy is done:
        // the buffer's host side is written only by `take`, and the decoded block is
        // held until the next `take`, which comes after this upload was waited for;
        // `take` checked that either holds the frame's upload bytes.
        unsafe { self.buffer.upload_from_async(source, bytes.start, stream) }
    }
}
