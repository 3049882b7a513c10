//! The process's GPU, opened once and shared ([`GpuDevice`]: context, green context
//! for `--sm-limit`, device facts, kernel modules loaded on first use), and one
//! pipeline's handle to it ([`Gpu`]: the device and a stream of the pipeline's own).
//!
//! Every extractor, matcher and bench of a process comes from the same device, so the
//! kernel modules are loaded once and buffers of one pipeline can be read by another.
//! Each pipeline keeps its own stream: a stream being captured into a CUDA graph must
//! not receive another pipeline's work.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use cudarc::driver::sys::CUdevice_attribute as Attribute;
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use crate::config::MemoryMode;
use crate::cuda::availability::availability;
use crate::cuda::compiler::Arch;
use crate::cuda::green::{self, SmConfinement};
use crate::cuda::memory::FrameBlocks;
use crate::cuda::modules::{cache_dir, MODULES};
use crate::error::{CudaError, Error, Result};
use crate::frame_memory::PageLockedPool;

/// The devices open in this process, by ordinal and SM limit; each lives as long as a
/// pipeline holds it.
type OpenDevices = Vec<((usize, Option<u32>), Weak<GpuDevice>)>;
static OPEN_DEVICES: Mutex<OpenDevices> = Mutex::new(Vec::new());

pub struct GpuDevice {
    pub ctx: Arc<CudaContext>,
    pub name: String,
    pub arch: Arch,
    /// SMs the pipelines run on and size their persistent grids to: the device's, or
    /// what `--sm-limit` got (see `confinement`).
    pub sm_count: u32,
    /// How `sm_count` is enforced when it is below the device's.
    pub confinement: SmConfinement,
    /// Shares memory with the host (Jetson): `memory: auto` then means unified.
    pub integrated: bool,
    /// The kernel modules loaded so far.
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    /// The page-locked blocks frames are decoded into, made on first use.
    receive_pool: OnceLock<Arc<PageLockedPool>>,
}

impl GpuDevice {
    /// Device `ordinal` with `sm_limit`, opened by the first caller and shared with
    /// every later one while any of them holds it.
    pub fn shared(ordinal: usize, sm_limit: Option<u32>) -> Result<Arc<Self>> {
        let mut open = OPEN_DEVICES.lock().unwrap_or_else(PoisonError::into_inner);
        open.retain(|(_, device)| device.strong_count() > 0);
        let key = (ordinal, sm_limit);
        if let Some(device) = open
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, d)| d.upgrade())
        {
            return Ok(device);
        }
        let device = Arc::new(Self::open(ordinal, sm_limit)?);
        open.push((key, Arc::downgrade(&device)));
        Ok(device)
    }

    /// Opens device `ordinal`. With `sm_limit` below the device's SM count its work runs
    /// in a green context of that many SMs; where none can be made, it falls back to
    /// sizing the grids only, and says so in a warning.
    fn open(ordinal: usize, sm_limit: Option<u32>) -> Result<Self> {
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
        let (ctx, sm_count, confinement) = match green::limits(sm_limit, device_sms) {
            None => (
                Self::without_event_tracking(CudaContext::new(ordinal)?),
                device_sms,
                SmConfinement::Whole,
            ),
            Some(limit) => match Self::green(ordinal, limit) {
                Ok((ctx, granted)) => (ctx, granted, SmConfinement::GreenContext),
                Err(reason) => {
                    log::warn!(
                        "--sm-limit {limit}: no green context ({reason}); only the grids are \
                         sized to {limit} SMs, the work still spreads over all {device_sms}"
                    );
                    let ctx = Self::without_event_tracking(CudaContext::new(ordinal)?);
                    (ctx, limit, SmConfinement::GridOnly)
                }
            },
        };
        let (major, minor) = ctx.compute_capability()?;
        Ok(Self {
            name: ctx.name()?,
            arch: Arch {
                major: major as u32,
                minor: minor as u32,
            },
            sm_count,
            confinement,
            integrated: ctx.attribute(Attribute::CU_DEVICE_ATTRIBUTE_INTEGRATED)? == 1,
            ctx,
            modules: Mutex::new(HashMap::new()),
            receive_pool: OnceLock::new(),
        })
    }

    fn without_event_tracking(ctx: Arc<CudaContext>) -> Arc<CudaContext> {
        // SAFETY: each pipeline uses its own stream and orders its own work; buffers
        // are raw allocations freed only after the stream is synchronised, so cudarc's
        // per-allocation event tracking is not needed.
        unsafe { ctx.disable_event_tracking() };
        ctx
    }

    /// A green context of at least `sms` SMs whose streams are bound to it, and the
    /// SMs it got.
    fn green(ordinal: usize, sms: u32) -> std::result::Result<(Arc<CudaContext>, u32), String> {
        let (ctx, granted) = green::green_context(ordinal, sms)?;
        let ctx = Self::without_event_tracking(ctx);
        let probe = ctx.new_stream().map_err(|e| format!("its stream: {e}"))?;
        green::check_stream_is_green(&probe)?;
        Ok((ctx, granted))
    }

    /// A new stream of the device, bound to its green context where there is one.
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        let stream = self.ctx.new_stream()?;
        if self.confinement == SmConfinement::GreenContext {
            green::check_stream_is_green(&stream)
                .map_err(|reason| Error::Cuda(CudaError::Unavailable(reason)))?;
        }
        Ok(stream)
    }

    /// Kernel `name` of module `module`, loading the module (compiled, or from the
    /// cache) on its first use in this process.
    pub fn function(&self, module: &str, name: &str) -> Result<CudaFunction> {
        let loaded = {
            let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
            match modules.get(module) {
                Some(loaded) => loaded.clone(),
                None => {
                    let source = MODULES
                        .iter()
                        .find(|m| m.name == module)
                        .ok_or_else(|| Error::Cuda(CudaError::NoModule(module.into())))?;
                    let (cubin, cached) = source.cubin(self.arch, &cache_dir())?;
                    log::debug!(
                        "kernel module {module} for {}: {}",
                        self.arch,
                        if cached { "from cache" } else { "compiled" }
                    );
                    let loaded = self.ctx.load_module(Ptx::from_binary(cubin))?;
                    modules.insert(source.name, loaded.clone());
                    loaded
                }
            }
        };
        loaded.load_function(name).map_err(|source| {
            Error::Cuda(CudaError::Kernel {
                module: module.into(),
                kernel: name.into(),
                source,
            })
        })
    }

    /// The device as reports and `orbsift bench` name it: "NVIDIA H200 (8 SMs, green
    /// context)" when limited.
    pub fn label(&self) -> String {
        match self.confinement.describe() {
            None => self.name.clone(),
            Some(how) => format!("{} ({} SMs, {how})", self.name, self.sm_count),
        }
    }

    /// The pool frames are best decoded into for pipelines that upload them: one per
    /// device, shared by its pipelines.
    pub fn receive_pool(&self) -> Arc<PageLockedPool> {
        self.receive_pool
            .get_or_init(|| {
                PageLockedPool::new(Box::new(FrameBlocks {
                    ctx: self.ctx.clone(),
                }))
            })
            .clone()
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

    /// An event that timestamps the stream where it is recorded: frames and searches
    /// are timed by two of them (`elapsed_ms`).
    pub fn timing_event(&self) -> Result<CudaEvent> {
        Ok(self
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?)
    }

    /// An event that only orders streams (one waits for work queued on another): no
    /// timestamp, cheaper to record and wait on.
    pub fn ordering_event(&self) -> Result<CudaEvent> {
        Ok(self
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))?)
    }
}

/// One pipeline's handle to the process's GPU: the shared device and the pipeline's
/// own stream.
pub struct Gpu {
    device: Arc<GpuDevice>,
    pub stream: Arc<CudaStream>,
}

impl Gpu {
    /// GPU `ordinal` (shared, see [`GpuDevice::shared`]) with a new stream.
    pub fn open(ordinal: usize, sm_limit: Option<u32>) -> Result<Self> {
        Self::on(GpuDevice::shared(ordinal, sm_limit)?)
    }

    /// A new pipeline on `device`.
    pub fn on(device: Arc<GpuDevice>) -> Result<Self> {
        let stream = device.new_stream()?;
        Ok(Self { device, stream })
    }

    /// The shared device, for another pipeline to open on it.
    pub fn device(&self) -> &Arc<GpuDevice> {
        &self.device
    }

    /// A second stream for work that forks from `stream` and joins it again.
    pub fn side_stream(&self) -> Result<Arc<CudaStream>> {
        self.device.new_stream()
    }
}

impl Deref for Gpu {
    type Target = GpuDevice;

    fn deref(&self) -> &GpuDevice {
        &self.device
    }
}
