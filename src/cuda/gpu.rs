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
use crate::cuda::modules::{cache_dir, MODULES};
use crate::error::{Error, Result};

pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub name: String,
    pub arch: Arch,
    pub sm_count: u32,
    /// Shares memory with the host (Jetson): `memory: auto` then means unified.
    pub integrated: bool,
    modules: HashMap<&'static str, Arc<CudaModule>>,
}

impl Gpu {
    /// Opens device `ordinal` and loads every kernel module (compiled, or from the cache).
    pub fn open(ordinal: usize) -> Result<Self> {
        availability()?;
        let ctx = CudaContext::new(ordinal)?;
        // SAFETY: each pipeline uses one stream and orders its own work; buffers are
        // raw allocations freed only after the stream is synchronised, so cudarc's
        // per-allocation event tracking is not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
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
            sm_count: ctx.attribute(Attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            integrated: ctx.attribute(Attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)? == 1,
            ctx,
            stream,
            arch,
            modules,
        })
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
    pub fn log_pipeline(&self, pipeline: &str, sm_limit: Option<u32>, unified: bool) {
        log::info!(
            "{pipeline} on {} ({}, {} SMs{}), {} memory",
            self.name,
            self.arch,
            self.sm_count,
            sm_limit.map_or(String::new(), |n| format!(", limited to {n}")),
            if unified { "unified" } else { "device" }
        );
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
            .ok_or_else(|| Error::InvalidParameter {
                name: "kernel module".into(),
                reason: format!("no module named {module}"),
            })?;
        Ok(loaded.load_function(name)?)
    }

    /// Blocks of a persistent grid for `function`: as many as the occupancy API says
    /// fit on one SM, times the SMs used (all, or `sm_limit`).
    pub fn persistent_blocks(
        &self,
        function: &CudaFunction,
        block: u32,
        sm_limit: Option<u32>,
    ) -> Result<u32> {
        let per_sm = function.occupancy_max_active_blocks_per_multiprocessor(block, 0, None)?;
        let sms = sm_limit.map_or(self.sm_count, |n| n.clamp(1, self.sm_count));
        Ok(per_sm.max(1) * sms)
    }
}
