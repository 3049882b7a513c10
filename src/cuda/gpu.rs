//! One GPU as a pipeline sees it: context, its own stream, device facts and the
//! loaded kernel modules.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::sys::CUdevice_attribute as Attribute;
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::config::MemoryMode;
use crate::cuda::availability::availability;
use crate::cuda::compiler::Arch;
use crate::cuda::green::{self, SmConfinement};
use crate::cuda::modules::{cache_dir, MODULES};
use crate::error::{CudaError, Error, Result};

pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub name: String,
    pub arch: Arch,
    /// SMs the pipeline runs on and sizes its persistent grids to: the device's, or
    /// what `--sm-limit` got (see `confinement`).
    pub sm_count: u32,
    /// How `sm_count` is enforced when it is below the device's.
    pub confinement: SmConfinement,
    /// Shares memory with the host (Jetson): `memory: auto` then means unified.
    pub integrated: bool,
    modules: HashMap<&'static str, Arc<CudaModule>>,
}

impl Gpu {
    /// Opens device `ordinal` and loads every kernel module (compiled, or from the cache).
    /// With `sm_limit` below the device's SM count the pipeline runs in a green context
    /// of that many SMs; where none can be made, it falls back to sizing the grids
    /// only, and says so in a warning.
    pub fn open(ordinal: usize, sm_limit: Option<u32>) -> Result<Self> {
        availability()?;
        let device_sms = cudarc::driver::result::device::get(ordinal as i32).and_then(|device| {
            // SAFETY: `device` is a valid ordinal's handle; a plain attribute query.
            unsafe {
                cudarc::driver::result::device::get_attribute(
                    device,
                    Attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                )
            }
        })? as u32;
        let (ctx, stream, sm_count, confinement) = match green::limits(sm_limit, device_sms) {
            None => {
                let (ctx, stream) = Self::context_and_stream(CudaContext::new(ordinal)?)?;
                (ctx, stream, device_sms, SmConfinement::Whole)
            }
            Some(limit) => match Self::green(ordinal, limit) {
                Ok((ctx, stream, granted)) => (ctx, stream, granted, SmConfinement::GreenContext),
                Err(reason) => {
                    log::warn!(
                        "--sm-limit {limit}: no green context ({reason}); only the grids are \
                         sized to {limit} SMs, the work still spreads over all {device_sms}"
                    );
                    let (ctx, stream) = Self::context_and_stream(CudaContext::new(ordinal)?)?;
                    (ctx, stream, limit, SmConfinement::GridOnly)
                }
            },
        };
        let (major, minor) = ctx.compute_capability()?;
        let arch = Arch {
            major: major as u32,
            minor: minor as u32,
        };
        let cache = cache_dir();
        let mut modules = HashMap::new();
        for module in MODULES {
            let (cubin, cached) = module.cubin(arch, &cache)?;
            log::debug!(
                "kernel module {} for {arch}: {}",
                module.name,
                if cached { "from cache" } else { "compiled" }
            );
            modules.insert(module.name, ctx.load_module(Ptx::from_binary(cubin))?);
        }
        Ok(Self {
            name: ctx.name()?,
            sm_count,
            confinement,
            integrated: ctx.attribute(Attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)? == 1,
            ctx,
            stream,
            arch,
            modules,
        })
    }

    /// The pipeline's context (event tracking off) and its one stream.
    fn context_and_stream(ctx: Arc<CudaContext>) -> Result<(Arc<CudaContext>, Arc<CudaStream>)> {
        // SAFETY: each pipeline uses one stream and orders its own work; buffers are
        // raw allocations freed only after the stream is synchronised, so cudarc's
        // per-allocation event tracking is not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        Ok((ctx, stream))
    }

    /// A green context of at least `sms` SMs with its stream, and the SMs it got.
    fn green(
        ordinal: usize,
        sms: u32,
    ) -> std::result::Result<(Arc<CudaContext>, Arc<CudaStream>, u32), String> {
        let (ctx, granted) = green::green_context(ordinal, sms)?;
        let (ctx, stream) =
            Self::context_and_stream(ctx).map_err(|e| format!("its stream: {e}"))?;
        green::check_stream_is_green(&stream)?;
        Ok((ctx, stream, granted))
    }

    /// The device as reports and `orbsift bench` name it: "NVIDIA H200 (8 SMs, green
    /// context)" when limited.
    pub fn label(&self) -> String {
        match self.confinement.describe() {
            None => self.name.clone(),
            Some(how) => format!("{} ({} SMs, {how})", self.name, self.sm_count),
        }
    }

    /// Whether a pipeline opened with `memory` keeps its frames in unified memory here.
    pub fn uses_unified(&self, memory: MemoryMode) -> bool {
        match memory {
            MemoryMode::Auto => self.integrated,
            MemoryMode::Unified => true,
            MemoryMode::Device => false,
        }
    }

    /// The one line a pipeline logs when it opens on this GPU.
    pub fn log_pipeline(&self, pipeline: &str, unified: bool) {
        log::info!(
            "{pipeline} on {} ({}, {} SMs{}), {} memory",
            self.name,
            self.arch,
            self.sm_count,
            self.confinement
                .describe()
                .map_or(String::new(), |how| format!(", {how}")),
            if unified { "unified" } else { "device" }
        );
    }

    /// A second stream in the pipeline's context, for work that forks from `stream`
    /// and joins it again; bound to the green context as `stream` is, where there is one.
    pub fn side_stream(&self) -> Result<Arc<CudaStream>> {
        let stream = self.ctx.new_stream()?;
        if self.confinement == SmConfinement::GreenContext {
            green::check_stream_is_green(&stream)
                .map_err(|reason| Error::Cuda(CudaError::Unavailable(reason)))?;
        }
        Ok(stream)
    }

    /// The events a frame records: before the upload, after it, after the extraction.
    pub fn frame_events(&self) -> Result<[CudaEvent; 3]> {
        let event = || {
            self.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        };
        Ok([event()?, event()?, event()?])
    }

    pub fn function(&self, module: &str, name: &str) -> Result<CudaFunction> {
        let loaded = self
            .modules
            .get(module)
            .ok_or_else(|| Error::Cuda(CudaError::NoModule(module.into())))?;
        loaded.load_function(name).map_err(|source| {
            Error::Cuda(CudaError::Kernel {
                module: module.into(),
                kernel: name.into(),
                source,
            })
        })
    }

    /// Blocks of a persistent grid for `function`: as many as the occupancy API says
    /// fit on one SM, times the SMs the pipeline runs on.
    pub fn persistent_blocks(&self, function: &CudaFunction, block: u32) -> Result<u32> {
        self.resident_blocks(function, block, 0)
    }

    /// [`Gpu::persistent_blocks`] for blocks that also take `shared` bytes of dynamic
    /// shared memory.
    pub fn resident_blocks(&self, function: &CudaFunction, block: u32, shared: u32) -> Result<u32> {
        let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(
            block,
            shared as usize,
            None,
        )?;
        Ok(per_sm.max(1) * self.sm_count)
    }
}
