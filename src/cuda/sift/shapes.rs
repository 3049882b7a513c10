//! The SIFT kernels, looked up once, and their launch shapes from the occupancy API:
//! block sizes from `cuOccupancyMaxPotentialBlockSize` (with each kernel's shared
//! memory per block), persistent grids of blocks-per-SM x the SMs the pipeline runs on
//! (all, or `--sm-limit`).

use std::ffi::c_int;

use cudarc::driver::{CudaStream, DeviceRepr, LaunchConfig};

use crate::cuda::abi::{BLUR_THREADS, ORIENTATION_BINS, RANK_TILE, SMALL_THREADS};
use crate::cuda::gpu::Gpu;
use crate::cuda::gray::GrayKernel;
use crate::cuda::kernel::Kernel;
use crate::cuda::sift::plan::{DeviceLimits, JobLaunch, BLUR_KERNEL_RADII, STEP_KERNEL_RADII};
use crate::error::Result;

const WARP: u32 = 32;
/// Warps that share one keypoint in the orientation kernel, at most: beyond this most
/// keypoints' windows leave warps idle.
const ORIENTATION_MAX_THREADS: u32 = 4 * WARP;
/// Warps that share one keypoint in the descriptor kernel: a warp alone spends ~120 us
/// on the largest windows (H200), so the block's warps split every window.
const DESCRIBE_THREADS: u32 = 4 * WARP;
/// Kernels with a thread per candidate or keypoint (thousands, not millions): small
/// blocks, so the work spreads over every SM.
const ITEM_MAX_THREADS: u32 = 4 * WARP;
/// The extrema kernel's warps take independent strips: blocks of a few warps let the
/// occupancy API fit the most of them.
const EXTREMA_MAX_THREADS: u32 = 8 * WARP;

extern "C" fn no_shared_memory(_block: c_int) -> usize {
    0
}

/// Shared floats of orientation: a histogram column per thread (rows padded by one), a
/// histogram sum per warp and the block's smoothed histogram.
extern "C" fn orientation_shared_memory(block: c_int) -> usize {
    let threads = block.max(0) as usize;
    (threads + 1 + threads / WARP as usize + 1) * ORIENTATION_BINS * 4
}

/// A kernel and how it is launched.
pub struct Launch {
    pub kernel: Kernel,
    /// Persistent grid: blocks per SM x SMs.
    pub blocks: u32,
    pub threads: u32,
    pub shared: u32,
}

impl Launch {
    /// At most `blocks`, and at most `needed`.
    pub fn config(&self, needed: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks.min(needed.max(1)), 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: self.shared,
        }
    }

    pub fn persistent(&self) -> LaunchConfig {
        self.config(self.blocks)
    }

    /// Queues the kernel on its persistent grid with `params`, its parameter struct.
    ///
    /// # Safety
    /// As [`Kernel::launch`].
    pub unsafe fn launch_persistent<P: DeviceRepr>(
        &self,
        stream: &CudaStream,
        params: &P,
    ) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.kernel.launch(stream, self.persistent(), params) }
    }
}

/// The first kernel of `radii` (register windows, narrowest first) that holds the
/// launch's widest radius, or the widest.
fn window_for(radii: &[usize], launch: &JobLaunch) -> usize {
    radii
        .iter()
        .position(|&radius| launch.max_radius <= radius)
        .unwrap_or(radii.len() - 1)
}

/// The tiled kernels whose launches overlap the tiled launches before them: copies of the
/// first of `Kernels::blur_dog` and `Kernels::levels`.
pub struct OverlappedKernels {
    pub blur_dog: [Launch; 2],
    pub levels: [Launch; 1],
}

/// Every kernel of the pipeline.
pub struct Kernels {
    /// `image_to_gray`: the frame as it arrived to the grey image octave 0 reads.
    pub gray: GrayKernel,
    /// `sift_blur_dog_r8`, `_r16`, `_r32`: a level from the level below, for radii up to
    /// 8, 16, 32.
    pub blur_dog: [Launch; 3],
    /// `sift_levels_r24`, `_r32`: several levels from one source, for halos up to 24, 32.
    pub levels: [Launch; 2],
    /// The copies of `sift_blur_dog_r8`, `_r16` and `sift_levels_r24` whose launches
    /// overlap the launches before them (kernels/common/tile_flow.cuh): sm_90 and later.
    pub overlapped: Option<OverlappedKernels>,
    /// `sift_small_octaves`, allowed the device's largest shared memory per block.
    pub small_octaves: Launch,
    pub limits: DeviceLimits,
    pub extrema: Launch,
    pub refine: Launch,
    pub orientation: Launch,
    pub rank_keys: Launch,
    pub rank_responses: Launch,
    pub place: Launch,
    pub describe: Launch,
}

impl Kernels {
    /// The kernel of a chained launch (level by level: the one whose register window
    /// holds the launch's radius) or a `stepped` one (the one holding its halo); its
    /// overlapped copy when `overlapped` and there is one.
    pub fn tiled_kernel(&self, launch: &JobLaunch, stepped: bool, overlapped: bool) -> &Launch {
        overlapped
            .then(|| self.overlapped_copy(launch, stepped))
            .flatten()
            .unwrap_or_else(|| {
                if stepped {
                    &self.levels[window_for(&STEP_KERNEL_RADII, launch)]
                } else {
                    &self.blur_dog[window_for(&BLUR_KERNEL_RADII, launch)]
                }
            })
    }

    /// The overlapped copy of the kernel of a chained or `stepped` launch, where there
    /// is one.
    pub fn overlapped_copy(&self, launch: &JobLaunch, stepped: bool) -> Option<&Launch> {
        let copies = self.overlapped.as_ref()?;
        if stepped {
            copies.levels.get(window_for(&STEP_KERNEL_RADII, launch))
        } else {
            copies.blur_dog.get(window_for(&BLUR_KERNEL_RADII, launch))
        }
    }

    /// The small octaves' two blocks (chain and tail), with `shared` bytes of dynamic
    /// shared memory each.
    pub fn small_octaves_config(&self, shared: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (2, 1, 1),
            block_dim: (self.small_octaves.threads, 1, 1),
            shared_mem_bytes: shared,
        }
    }

    pub fn load(gpu: &Gpu, blur_shared: [u32; 3], step_shared: [u32; 2]) -> Result<Self> {
        let shared_limit = gpu.ctx.attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )? as u32;
        let fixed = |module, name, threads: u32, shared: u32| -> Result<Launch> {
            let kernel = Kernel::load(gpu, module, name)?;
            if shared > 48 * 1024 {
                kernel
                    .function()
                    .set_attribute(
                        cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        shared as i32,
                    )
                    .map_err(|source| kernel.error(source))?;
            }
            Ok(Launch {
                blocks: kernel.resident_blocks(gpu, threads, shared)?,
                kernel,
                threads,
                shared,
            })
        };
        let sized = |module,
                     name,
                     shared_of: extern "C" fn(c_int) -> usize,
                     max_threads: u32|
         -> Result<Launch> {
            let kernel = Kernel::load(gpu, module, name)?;
            let (_, threads) = kernel
                .function()
                .occupancy_max_potential_block_size(shared_of, 0, max_threads, None)
                .map_err(|source| kernel.error(source))?;
            // Warp-per-item kernels need whole warps.
            let threads = (threads / WARP).max(1) * WARP;
            let shared = shared_of(threads as c_int) as u32;
            Ok(Launch {
                blocks: kernel.resident_blocks(gpu, threads, shared)?,
                kernel,
                threads,
                shared,
            })
        };
        Ok(Self {
            gray: GrayKernel::load(gpu)?,
            blur_dog: [
                fixed(
                    "sift_pyramid",
                    "sift_blur_dog_r8",
                    BLUR_THREADS,
                    blur_shared[0],
                )?,
                fixed(
                    "sift_pyramid",
                    "sift_blur_dog_r16",
                    BLUR_THREADS,
                    blur_shared[1],
                )?,
                fixed(
                    "sift_pyramid",
                    "sift_blur_dog_r32",
                    BLUR_THREADS,
                    blur_shared[2],
                )?,
            ],
            levels: [
                fixed(
                    "sift_levels",
                    "sift_levels_r24",
                    BLUR_THREADS,
                    step_shared[0],
                )?,
                fixed(
                    "sift_levels",
                    "sift_levels_r32",
                    BLUR_THREADS,
                    step_shared[1],
                )?,
            ],
            overlapped: if gpu.arch.major >= 9 {
                Some(OverlappedKernels {
                    blur_dog: [
                        fixed(
                            "sift_pyramid",
                            "sift_blur_dog_r8_overlapped",
                            BLUR_THREADS,
                            blur_shared[0],
                        )?,
                        fixed(
                            "sift_pyramid",
                            "sift_blur_dog_r16_overlapped",
                            BLUR_THREADS,
                            blur_shared[1],
                        )?,
                    ],
                    levels: [fixed(
                        "sift_levels",
                        "sift_levels_r24_overlapped",
                        BLUR_THREADS,
                        step_shared[0],
                    )?],
                })
            } else {
                None
            },
            small_octaves: fixed(
                "sift_small_octaves",
                "sift_small_octaves",
                SMALL_THREADS,
                shared_limit,
            )?,
            limits: DeviceLimits {
                sms: gpu.sm_count as usize,
                shared_per_block: shared_limit as usize,
            },
            extrema: sized(
                "sift_extrema",
                "sift_extrema",
                no_shared_memory,
                EXTREMA_MAX_THREADS,
            )?,
            refine: sized(
                "sift_refine",
                "sift_refine",
                no_shared_memory,
                ITEM_MAX_THREADS,
            )?,
            orientation: sized(
                "sift_orientation",
                "sift_orientation",
                orientation_shared_memory,
                ORIENTATION_MAX_THREADS,
            )?,
            rank_keys: fixed("sift_order", "sift_rank_keys", RANK_TILE, 0)?,
            rank_responses: fixed("sift_order", "sift_rank_responses", RANK_TILE, 0)?,
            place: sized(
                "sift_order",
                "sift_place",
                no_shared_memory,
                ITEM_MAX_THREADS,
            )?,
            describe: fixed("sift_describe", "sift_describe", DESCRIBE_THREADS, 0)?,
        })
    }
}
