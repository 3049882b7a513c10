//! Raw GPU allocations owned by one pipeline: device buffers, and page-locked host
//! buffers that may be mapped into the device's address space.
//!
//! Kernels take plain device pointers, so a buffer is a pointer and a size; the
//! pipeline owns every buffer, binds its context before freeing, and never frees
//! while its stream has work in flight (it synchronises once per frame).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaStream};

use crate::error::{CudaError, Error, Result};
use crate::frame_memory::PageLockedAllocator;

/// Device and page-locked host allocations made by this process so far.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// How many device and page-locked host buffers this process has allocated: steady
/// streams of frames must not add to it.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// `bytes` of device memory.
pub struct DeviceBuffer {
    ctx: Arc<CudaContext>,
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
}

impl DeviceBuffer {
    pub fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<Self> {
        ctx.bind_to_thread()?;
        // SAFETY: the context is current; a zero-byte request is rounded up to one
        // byte because cuMemAlloc rejects 0. The memory is uninitialised, and every
        // kernel writes before it reads (or the pipeline clears it first).
        let ptr = unsafe { result::malloc_sync(bytes.max(1)) }?;
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        Ok(Self {
            ctx: ctx.clone(),
            ptr,
            bytes,
        })
    }

    /// A buffer holding `data`.
    pub fn from_slice<T: Copy>(ctx: &Arc<CudaContext>, data: &[T]) -> Result<Self> {
        let buffer = Self::new(ctx, std::mem::size_of_val(data))?;
        if !data.is_empty() {
            // SAFETY: `buffer` holds exactly `size_of_val(data)` bytes; the copy is
            // synchronous, so `data` outlives it.
            unsafe { result::memcpy_htod_sync(buffer.ptr, data) }?;
        }
        Ok(buffer)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let freed = self.ctx.bind_to_thread().and_then(|()| {
            // SAFETY: `ptr` came from cuMemAlloc in this context and is freed once; the
            // owner synchronised its stream, so no kernel still uses it.
            unsafe { result::free_sync(self.ptr) }
        });
        if let Err(error) = freed {
            log::warn!("cuMemFree failed: {error}");
        }
    }
}

/// `bytes` of page-locked host memory, mapped into the device (`device_ptr`) when
/// asked: kernels then read and write it in place (integrated GPUs, `unified` mode).
pub struct HostBuffer {
    ctx: Arc<CudaContext>,
    host: *mut u8,
    pub device_ptr: Option<sys::CUdeviceptr>,
    pub bytes: usize,
}

// SAFETY: the buffer is plain memory owned by this value; the raw pointer is only
// dereferenced through `&self`/`&mut self` borrows.
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    pub fn new(ctx: &Arc<CudaContext>, bytes: usize, mapped: bool) -> Result<Self> {
        ctx.bind_to_thread()?;
        let flags = if mapped {
            sys::CU_MEMHOSTALLOC_DEVICEMAP
        } else {
            0
        };
        // SAFETY: the context is current; the block is zeroed below before any read.
        let host = unsafe { result::malloc_host(bytes.max(1), flags) }?.cast::<u8>();
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `host` points to at least `bytes.max(1)` writable bytes.
        unsafe { std::ptr::write_bytes(host, 0, bytes.max(1)) };
        let mut buffer = Self {
            ctx: ctx.clone(),
            host,
            device_ptr: None,
            bytes,
        };
        if mapped {
            let mut device: sys::CUdeviceptr = 0;
            // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP in this context.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) }.result()?;
            buffer.device_ptr = Some(device);
        }
        Ok(buffer)
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `host` points to `bytes` initialised bytes owned by `self`.
        unsafe { std::slice::from_raw_parts(self.host, self.bytes) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.host, self.bytes) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        let freed = self.ctx.bind_to_thread().and_then(|()| {
            // SAFETY: `host` came from cuMemHostAlloc and is freed once, after the
            // owner's last synchronisation.
            unsafe { result::free_host(self.host.cast()) }
        });
        if let Err(error) = freed {
            log::warn!("cuMemFreeHost failed: {error}");
        }
    }
}

/// Page-locked blocks for frames to be decoded into ([`crate::frame_memory`]):
/// portable, so that every context of the process (a green one included) uploads from
/// them at the copy engine's speed.
pub struct FrameBlocks {
    pub ctx: Arc<CudaContext>,
}

impl PageLockedAllocator for FrameBlocks {
    fn allocate(&self, bytes: usize) -> Result<NonNull<u8>> {
        self.ctx.bind_to_thread()?;
        // SAFETY: the context is current (the decoding thread is not the pipeline's);
        // the block is written before anything reads it.
        let host = unsafe { result::malloc_host(bytes.max(1), sys::CU_MEMHOSTALLOC_PORTABLE) }?;
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        NonNull::new(host.cast::<u8>())
            .ok_or_else(|| Error::Cuda(CudaError::Unavailable("cuMemHostAlloc gave null".into())))
    }

    unsafe fn free(&self, ptr: NonNull<u8>) {
        let freed = self.ctx.bind_to_thread().and_then(|()| {
            // SAFETY: as the caller vouches, `ptr` came from `allocate` and no copy reads it.
            unsafe { result::free_host(ptr.as_ptr().cast()) }
        });
        if let Err(error) = freed {
            log::warn!("cuMemFreeHost failed: {error}");
        }
    }
}

/// A buffer both sides use once per frame: in place in mapped host memory
/// (`unified`), or a device buffer with a pinned host twin and async copies on the
/// stream (`device`).
pub struct Staged {
    device: Option<DeviceBuffer>,
    pub host: HostBuffer,
    /// Where kernels read and write.
    pub ptr: sys::CUdeviceptr,
}

impl Staged {
    pub fn new(ctx: &Arc<CudaContext>, bytes: usize, unified: bool) -> Result<Self> {
        Self::with_device_bytes(ctx, bytes, bytes, unified)
    }

    /// A staged buffer of `bytes` whose device side holds `device_bytes` (at least
    /// `bytes`; mapped memory holds `bytes` only): the host side is uploaded to its start.
    pub fn with_device_bytes(
        ctx: &Arc<CudaContext>,
        bytes: usize,
        device_bytes: usize,
        unified: bool,
    ) -> Result<Self> {
        if unified {
            let host = HostBuffer::new(ctx, bytes, true)?;
            let ptr = host.device_ptr.unwrap_or_default();
            Ok(Self {
                device: None,
                host,
                ptr,
            })
        } else {
            let device = DeviceBuffer::new(ctx, device_bytes.max(bytes))?;
            let ptr = device.ptr;
            Ok(Self {
                device: Some(device),
                host: HostBuffer::new(ctx, bytes, false)?,
                ptr,
            })
        }
    }

    /// Whether kernels read the host side in place (`unified`), so that the device
    /// sees only what is in it.
    pub fn is_mapped(&self) -> bool {
        self.device.is_none()
    }

    /// Queues the copy of `source` to the device side's bytes from `offset` (nothing
    /// to do when mapped).
    ///
    /// # Safety
    /// `source` is page-locked and stays unchanged until the copy is done (the
    /// stream's next synchronisation); it fits the buffer from `offset`.
    pub unsafe fn upload_from_async(
        &self,
        source: &[u8],
        offset: usize,
        stream: &CudaStream,
    ) -> Result<()> {
        if let Some(device) = &self.device {
            debug_assert!(offset + source.len() <= device.bytes);
            // SAFETY: as the caller vouches; `device` holds the bytes copied to.
            unsafe {
                result::memcpy_htod_async(device.ptr + offset as u64, source, stream.cu_stream())
            }?;
        }
        Ok(())
    }

    /// Queues the copy of the first `bytes` to the host (nothing to do when mapped).
    pub fn download_async(&mut self, bytes: usize, stream: &CudaStream) -> Result<()> {
        if let Some(device) = &self.device {
            let bytes = bytes.min(self.host.bytes);
            let host = &mut self.host.as_mut_slice()[..bytes];
            // SAFETY: `host` is pinned and is read or freed only after the frame's
            // synchronisation; `device` holds at least `bytes`.
            unsafe { result::memcpy_dtoh_async(host, device.ptr, stream.cu_stream()) }?;
        }
        Ok(())
    }
}

/// A buffer reused from call to call and made again only to grow (to a power of two,
/// so that slowly growing sizes rarely reallocate): a steady stream of similar
/// requests allocates nothing.
pub struct Reused<T> {
    held: Option<T>,
    bytes: usize,
}

impl<T> Default for Reused<T> {
    fn default() -> Self {
        Self {
            held: None,
            bytes: 0,
        }
    }
}

impl<T> Reused<T> {
    /// The buffer, of at least `bytes`; `make(size)` makes a larger one when needed
    /// (after the smaller one is freed).
    pub fn at_least(
        &mut self,
        bytes: usize,
        make: impl FnOnce(usize) -> Result<T>,
    ) -> Result<&mut T> {
        let buffer = match self.held.take() {
            Some(buffer) if self.bytes >= bytes => buffer,
            smaller => {
                drop(smaller);
                self.bytes = 0;
                let size = bytes.max(1).next_power_of_two();
                let buffer = make(size)?;
                self.bytes = size;
                buffer
            }
        };
        Ok(self.held.insert(buffer))
    }
}
