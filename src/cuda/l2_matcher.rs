//! Brute-force matching of `sift128u8` descriptors on the GPU (kernels/match/l2.cu):
//! exact squared L2 distances with `__dp4a`, k = 2, and the cross-check in the same pass.

use std::mem::size_of;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, CudaContext, CudaEvent, CudaStream, LaunchConfig};

use crate::cuda::abi::match_params::{L2Knn2Params, L2MergeParams};
use crate::cuda::abi::{Knn2, L2_THREADS, L2_TILE};
use crate::cuda::gpu::{Gpu, GpuDevice};
use crate::cuda::kernel::Kernel;
use crate::cuda::matcher::{checked, download_knn2, upload_reused, NearestTwo};
use crate::cuda::memory::{DeviceBuffer, Reused, Staged};
use crate::error::Result;
use crate::spec::matching::l2_distance;
use crate::types::{DescriptorKind, Descriptors};

/// Threads per block of `match_l2_merge`.
const MERGE_THREADS: u32 = 256;
/// Bytes of one `partial` record (`int4`).
const PARTIAL_BYTES: usize = 16;

/// `sift128u8` descriptors resident on the GPU.
pub struct DeviceDescriptors {
    buffer: DeviceBuffer,
    len: i32,
}

impl DeviceDescriptors {
    fn view(&self) -> (CUdeviceptr, i32) {
        (self.buffer.ptr, self.len)
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// How `match_l2_knn2` covers the pairs: blocks of `L2_TILE` queries times runs of
/// `tiles_per_run` train tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Launch {
    query_tiles: u32,
    runs: u32,
    tiles_per_run: u32,
}

impl Launch {
    /// Splits the train set into as many runs as keep the grid within one wave of
    /// `resident_blocks` (few queries would otherwise leave most SMs idle), no run empty.
    fn new(n_query: usize, n_train: usize, resident_blocks: u32) -> Self {
        let query_tiles = n_query.div_ceil(L2_TILE).max(1) as u32;
        let train_tiles = n_train.div_ceil(L2_TILE).max(1) as u32;
        let runs = (resident_blocks / query_tiles).clamp(1, train_tiles);
        let tiles_per_run = train_tiles.div_ceil(runs);
        Self {
            query_tiles,
            runs: train_tiles.div_ceil(tiles_per_run),
            tiles_per_run,
        }
    }
}

/// Scratch buffers, grown when a larger pair of sets comes and otherwise reused.
struct Scratch {
    /// One `int4` per query and run.
    partial: DeviceBuffer,
    /// One `distance << 32 | query` per train descriptor, for the cross-check.
    nearest_query: DeviceBuffer,
    /// One [`Knn2`] per query, with its host twin.
    forward: Staged,
}

/// The L2 k = 2 search: see kernels/match/l2.cu.
pub struct CudaL2Matcher {
    gpu: Gpu,
    knn2: Kernel,
    merge: Kernel,
    /// Blocks of `match_l2_knn2` resident at once on the whole GPU.
    resident_blocks: u32,
    scratch: Option<Scratch>,
    /// Where host sets are uploaded to: reused from search to search.
    query: Reused<DeviceBuffer>,
    train: Reused<DeviceBuffer>,
    /// Around the kernels of the last search.
    events: [CudaEvent; 2],
}

impl CudaL2Matcher {
    pub fn new(sm_limit: Option<u32>) -> Result<Self> {
        Self::on(GpuDevice::shared(0, sm_limit)?)
    }

    /// The search on `device`, with a stream of its own.
    pub(crate) fn on(device: Arc<GpuDevice>) -> Result<Self> {
        let gpu = Gpu::on(device)?;
        let knn2 = Kernel::load(&gpu, "match_l2", "match_l2_knn2")?;
        let resident_blocks = knn2.persistent_blocks(&gpu, L2_THREADS)?;
        Ok(Self {
            merge: Kernel::load(&gpu, "match_l2", "match_l2_merge")?,
            events: [gpu.timing_event()?, gpu.timing_event()?],
            knn2,
            resident_blocks,
            scratch: None,
            query: Reused::default(),
            train: Reused::default(),
            gpu,
        })
    }

    /// Copies `set` (`sift128u8`) to the GPU.
    pub fn upload(&self, set: &Descriptors, role: &str) -> Result<DeviceDescriptors> {
        let len = checked(set, <Self as NearestTwo>::KIND, role)?;
        Ok(DeviceDescriptors {
            buffer: DeviceBuffer::from_slice(&self.gpu.ctx, &set.data)?,
            len,
        })
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.gpu.ctx
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.gpu.stream
    }

    /// The device's name, for benchmark reports.
    pub fn device_name(&self) -> &str {
        &self.gpu.name
    }

    /// Milliseconds the kernels of the last [`Self::knn2_resident`] took on the GPU.
    pub fn last_kernel_ms(&self) -> Result<f32> {
        Ok(self.events[0].elapsed_ms(&self.events[1])?)
    }

    /// [`NearestTwo::knn2`] on descriptors already on the GPU; distances are squared.
    pub fn knn2_resident(
        &mut self,
        query: &DeviceDescriptors,
        train: &DeviceDescriptors,
        mutual: bool,
    ) -> Result<Vec<Knn2>> {
        self.knn2_at(query.view(), train.view(), mutual)
    }

    /// [`Self::knn2_resident`] on sets anywhere on the device (another pipeline's
    /// output buffer): `(pointer, count)` each.
    pub(crate) fn knn2_at(
        &mut self,
        query: (CUdeviceptr, i32),
        train: (CUdeviceptr, i32),
        mutual: bool,
    ) -> Result<Vec<Knn2>> {
        let (n_query, n_train) = (query.1.max(0) as usize, train.1.max(0) as usize);
        if n_query == 0 || n_train == 0 {
            return Ok(vec![
                Knn2 {
                    best_index: -1,
                    best: i32::MAX,
                    second: i32::MAX,
                };
                n_query
            ]);
        }
        let launch = Launch::new(n_query, n_train, self.resident_blocks);
        let runs = launch.runs as usize;
        self.gpu.ctx.bind_to_thread()?;
        let scratch = Scratch::at_least(
            &mut self.scratch,
            &self.gpu.ctx,
            runs * n_query,
            n_train,
            n_query,
        )?;
        let stream = &self.gpu.stream;
        self.events[0].record(stream)?;
        let nearest_query = if mutual {
            // SAFETY: the buffer holds at least n_train u64 on this context; all ones
            // is "no query yet" for the kernel's atomicMin.
            unsafe {
                result::memset_d8_async(
                    scratch.nearest_query.ptr,
                    0xff,
                    n_train * size_of::<u64>(),
                    stream.cu_stream(),
                )
            }?;
            scratch.nearest_query.ptr
        } else {
            0
        };
        let search = L2Knn2Params {
            query: query.0,
            train: train.0,
            partial: scratch.partial.ptr,
            nearest_query,
            n_query: query.1,
            n_train: train.1,
            tiles_per_run: launch.tiles_per_run as i32,
            padding: 0,
        };
        let merge = L2MergeParams {
            partial: scratch.partial.ptr,
            nearest_query,
            out: scratch.forward.ptr,
            runs: launch.runs as i32,
            n_query: query.1,
        };
        // SAFETY: the descriptor buffers hold n_query / n_train rows of 128 bytes,
        // `partial` holds runs * n_query int4, `nearest_query` (or null) n_train u64,
        // `forward` n_query int3, on this stream's context until it is synchronised.
        unsafe {
            launch_knn2(&self.knn2, stream, launch, &search)?;
            launch_merge(&self.merge, stream, &merge)?;
        }
        self.events[1].record(stream)?;
        download_knn2(&mut scratch.forward, n_query, stream)
    }
}

/// Queues `match_l2_knn2` on the grid of `launch`, the one `p.tiles_per_run` was
/// computed for: a block per query tile and run, as the kernel indexes them.
///
/// # Safety
/// `p.query` and `p.train` hold n_query / n_train descriptors, `p.partial` runs x n_query
/// `int4` records and `p.nearest_query` is null or holds n_train `u64`, on `stream`'s
/// context, until the stream has run the kernel.
unsafe fn launch_knn2(
    kernel: &Kernel,
    stream: &CudaStream,
    launch: Launch,
    p: &L2Knn2Params,
) -> Result<()> {
    let config = LaunchConfig {
        grid_dim: (launch.query_tiles, launch.runs, 1),
        block_dim: (L2_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `p` is the kernel's parameter struct; the blocks of `launch` read and
    // write only the rows and records the caller vouches for.
    unsafe { kernel.launch(stream, config, p) }
}

/// Queues `match_l2_merge`: a thread per query folds its runs' records.
///
/// # Safety
/// `p.partial` holds runs x n_query `int4` records, `p.nearest_query` is null or holds
/// a `u64` for every train index the records name, and `p.out` n_query [`Knn2`], on
/// `stream`'s context, until the stream has run the kernel.
unsafe fn launch_merge(kernel: &Kernel, stream: &CudaStream, p: &L2MergeParams) -> Result<()> {
    let config = LaunchConfig {
        grid_dim: ((p.n_query.max(1) as u32).div_ceil(MERGE_THREADS), 1, 1),
        block_dim: (MERGE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `p` is the kernel's parameter struct; threads past n_query return at once.
    unsafe { kernel.launch(stream, config, p) }
}

impl Scratch {
    /// The scratch in `slot` if it holds at least `partials` records, `n_train` train
    /// slots and `n_query` results, else a new one put there, each buffer as large as
    /// the old one's and this search's needs: searches of alternating shapes (a stereo
    /// pair's two directions) settle on one scratch.
    fn at_least<'a>(
        slot: &'a mut Option<Scratch>,
        ctx: &Arc<CudaContext>,
        partials: usize,
        n_train: usize,
        n_query: usize,
    ) -> Result<&'a mut Scratch> {
        let mut bytes = [
            partials * PARTIAL_BYTES,
            n_train * size_of::<u64>(),
            n_query * size_of::<Knn2>(),
        ];
        let held = |s: &Scratch| [s.partial.bytes, s.nearest_query.bytes, s.forward.host.bytes];
        let scratch = match slot.take() {
            Some(scratch) if held(&scratch).iter().zip(&bytes).all(|(h, b)| h >= b) => scratch,
            old => {
                if let Some(old) = &old {
                    for (b, h) in bytes.iter_mut().zip(held(old)) {
                        *b = (*b).max(h);
                    }
                }
                drop(old);
                let [partial, nearest_query, forward] = bytes;
                Scratch {
                    partial: DeviceBuffer::new(ctx, partial)?,
                    nearest_query: DeviceBuffer::new(ctx, nearest_query)?,
                    forward: Staged::new(ctx, forward, false)?,
                }
            }
        };
        Ok(slot.insert(scratch))
    }
}

impl NearestTwo for CudaL2Matcher {
    const KIND: DescriptorKind = DescriptorKind::Sift128U8;

    fn open(sm_limit: Option<u32>) -> Result<Self> {
        Self::new(sm_limit)
    }

    fn knn2(
        &mut self,
        query: &Descriptors,
        train: &Descriptors,
        mutual: bool,
    ) -> Result<Vec<Knn2>> {
        let (n_query, n_train) = (
            checked(query, Self::KIND, "query")?,
            checked(train, Self::KIND, "train")?,
        );
        let query_ptr = upload_reused(&self.gpu, &mut self.query, &query.data)?.ptr;
        let train_ptr = upload_reused(&self.gpu, &mut self.train, &train.data)?.ptr;
        self.knn2_at((query_ptr, n_query), (train_ptr, n_train), mutual)
    }

    fn report(raw: i32) -> f32 {
        l2_distance(raw as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every train tile lies in exactly one run and no run is empty.
    fn assert_covers(launch: Launch, n_train: usize) {
        let train_tiles = n_train.div_ceil(L2_TILE).max(1) as u32;
        assert!(launch.runs >= 1 && launch.tiles_per_run >= 1, "{launch:?}");
        assert!(
            launch.runs * launch.tiles_per_run >= train_tiles,
            "{launch:?}"
        );
        assert!(
            (launch.runs - 1) * launch.tiles_per_run < train_tiles,
            "{launch:?}"
        );
    }

    #[test]
    fn the_5000_by_7000_case_fills_one_wave_of_two_blocks_per_sm_on_132_sms() {
        let launch = Launch::new(5000, 7000, 2 * 132);
        assert_eq!(launch.query_tiles, 40);
        assert!(launch.query_tiles * launch.runs <= 264, "{launch:?}");
        assert_eq!(launch.runs, 6);
        assert_covers(launch, 7000);
    }

    #[test]
    fn runs_cover_the_train_set_for_any_sizes() {
        for n_query in [1, 127, 128, 129, 1000, 5000, 40_000] {
            for n_train in [1, 2, 127, 128, 129, 7000, 100_000] {
                for resident in [1, 8, 264, 1000] {
                    let launch = Launch::new(n_query, n_train, resident);
                    assert_eq!(launch.query_tiles as usize, n_query.div_ceil(L2_TILE));
                    assert_covers(launch, n_train);
                    if launch.runs > 1 {
                        assert!(launch.query_tiles * launch.runs <= resident, "{launch:?}");
                    }
                }
            }
        }
    }
}
