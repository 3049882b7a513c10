//! A kernel function that knows its own name, so that a failed launch says which
//! kernel failed (`CudaError::Kernel`) instead of a bare driver error.

use std::ffi::c_void;

use cudarc::driver::{sys, CudaFunction, CudaStream, DeviceRepr, DriverError, LaunchArgs};
use cudarc::driver::{LaunchConfig, PushKernelArg};

use crate::cuda::gpu::{Gpu, GpuDevice};
use crate::error::{CudaError, Error, Result};

/// Kernel `name` of module `module`, loaded.
pub struct Kernel {
    function: CudaFunction,
    module: &'static str,
    name: &'static str,
}

impl Kernel {
    pub fn load(gpu: &Gpu, module: &'static str, name: &'static str) -> Result<Self> {
        Ok(Self {
            function: gpu.function(module, name)?,
            module,
            name,
        })
    }

    /// For occupancy queries and attributes.
    pub fn function(&self) -> &CudaFunction {
        &self.function
    }

    /// The error of a driver call about this kernel.
    pub fn error(&self, source: DriverError) -> Error {
        Error::Cuda(CudaError::Kernel {
            module: self.module.into(),
            kernel: self.name.into(),
            source,
        })
    }

    /// Blocks of a persistent grid: as many blocks of `threads` threads (and `shared`
    /// bytes of dynamic shared memory) as the occupancy API says fit on one SM, times
    /// the SMs the pipeline runs on.
    pub fn resident_blocks(&self, gpu: &GpuDevice, threads: u32, shared: u32) -> Result<u32> {
        let per_sm = self
            .function
            .occupancy_max_active_blocks_per_multiprocessor(threads, shared as usize, None)
            .map_err(|source| self.error(source))?;
        Ok(per_sm.max(1) * gpu.sm_count)
    }

    /// [`resident_blocks`](Self::resident_blocks) without dynamic shared memory.
    pub fn persistent_blocks(&self, gpu: &GpuDevice, threads: u32) -> Result<u32> {
        self.resident_blocks(gpu, threads, 0)
    }

    /// Queues this kernel on `stream` with `params`, the struct it takes as its one
    /// parameter (kernels/common/*_params.cuh, mirrored in `cuda::abi`).
    ///
    /// # Safety
    /// `P` is the kernel's parameter struct, and every device pointer in `params` is
    /// valid for what the kernel reads and writes through it, until the stream has run
    /// the kernel.
    pub unsafe fn launch<P: DeviceRepr>(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        params: &P,
    ) -> Result<()> {
        // SAFETY: the caller's contract: `params` is the kernel's one parameter.
        unsafe { self.queue(stream, params, |args| args.launch(config)) }
    }

    /// [`launch`](Self::launch) as a cooperative launch (its grid is resident at once).
    ///
    /// # Safety
    /// As [`launch`](Self::launch).
    pub unsafe fn launch_cooperative<P: DeviceRepr>(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        params: &P,
    ) -> Result<()> {
        // SAFETY: the caller's contract: `params` is the kernel's one parameter.
        unsafe { self.queue(stream, params, |args| args.launch_cooperative(config)) }
    }

    /// [`launch`](Self::launch) with programmatic stream serialization (sm_90 and
    /// later): the kernel may start once every block of the kernel before it on
    /// `stream` has let its dependents start (`griddepcontrol.launch_dependents`), or
    /// ended. Captured into a graph, its edges from the kernels before it are
    /// programmatic.
    ///
    /// # Safety
    /// As [`launch`](Self::launch), and the kernel waits for whatever it reads of the
    /// kernels before it (kernels/common/tile_flow.cuh).
    pub unsafe fn launch_programmatic<P: DeviceRepr>(
        &self,
        stream: &CudaStream,
        config: LaunchConfig,
        params: &P,
    ) -> Result<()> {
        // SAFETY: a union of plain integers and structs of them: all zeros is a value.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.programmaticStreamSerializationAllowed = 1;
        let mut attribute = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        };
        let launch = sys::CUlaunchConfig {
            gridDimX: config.grid_dim.0,
            gridDimY: config.grid_dim.1,
            gridDimZ: config.grid_dim.2,
            blockDimX: config.block_dim.0,
            blockDimY: config.block_dim.1,
            blockDimZ: config.block_dim.2,
            sharedMemBytes: config.shared_mem_bytes,
            hStream: stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: 1,
        };
        let mut args = [params as *const P as *mut c_void];
        stream.context().bind_to_thread()?;
        // SAFETY: `launch` and `attribute` live across the call; `args` holds the one
        // parameter the kernel takes (the caller's contract), read during the call.
        unsafe {
            sys::cuLaunchKernelEx(
                &launch,
                self.function.cu_function(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(|source| self.error(source))
    }

    /// Pushes `params` and queues the kernel with `start`, naming the kernel in an error.
    ///
    /// # Safety
    /// As [`launch`](Self::launch).
    unsafe fn queue<P: DeviceRepr, T>(
        &self,
        stream: &CudaStream,
        params: &P,
        start: impl FnOnce(&mut LaunchArgs) -> std::result::Result<T, DriverError>,
    ) -> Result<()> {
        let mut args = stream.launch_builder(&self.function);
        args.arg(params);
        start(&mut args)
            .map(drop)
            .map_err(|source| self.error(source))
    }
}
