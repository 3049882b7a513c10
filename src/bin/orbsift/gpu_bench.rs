//! `orbsift bench --backend cuda`: GPU timings from events, medians over rotated inputs.

use std::fmt;
use std::time::Instant;

use orbsift::config::MemoryMode;
use orbsift::cuda::{CudaOrbExtractor, CudaSiftExtractor, FrameTiming};
use orbsift::{
    Error, Extractor, Features, GrayImage, ImageError, Matcher, OrbConfig, Result, SiftConfig,
};

/// Matching runs timed per size for SIFT: at most this many, and no more once
/// [`SIFT_MATCH_BUDGET_S`] seconds were spent (a CPU matcher takes seconds a run at
/// 3840x2160), but at least [`SIFT_MATCH_MIN_RUNS`].
const SIFT_MATCH_RUNS: usize = 20;
const SIFT_MATCH_MIN_RUNS: usize = 3;
const SIFT_MATCH_BUDGET_S: f64 = 1.0;

/// How the bench opens the GPU pipeline.
#[derive(Clone, Copy, Debug)]
pub struct GpuSetup {
    pub memory: MemoryMode,
    /// Run on this many SMs only, in a green context where the driver has one.
    pub sm_limit: Option<u32>,
    /// Replay each frame's kernels as one captured CUDA graph; `false` launches them
    /// one by one, to profile plain launches or to measure what the graph saves.
    pub graph: bool,
}

impl GpuSetup {
    fn open_orb(&self, config: &OrbConfig) -> Result<CudaOrbExtractor> {
        let mut gpu = CudaOrbExtractor::new(config.clone(), self.memory, self.sm_limit)?;
        gpu.set_graph(self.graph);
        Ok(gpu)
    }

    fn open_sift(&self, config: &SiftConfig) -> Result<CudaSiftExtractor> {
        let mut gpu = CudaSiftExtractor::new(config.clone(), self.memory, self.sm_limit)?;
        gpu.set_graph(self.graph);
        Ok(gpu)
    }
}

/// One `BENCH` line. ORB: `match_ms_median` is the cost of fused matching against a
/// resident train set of the same size (extraction with it minus extraction without).
/// SIFT: the frame's descriptors matched against themselves by the configured matcher.
#[derive(Clone, Debug)]
pub struct GpuBench {
    pub algo: &'static str,
    pub device: String,
    pub width: usize,
    pub height: usize,
    pub features: usize,
    pub extract_ms_median: f64,
    pub extract_ms_min: f64,
    pub upload_ms_median: f64,
    pub match_ms_median: f64,
    /// The fastest single matching run; None for ORB, whose fused matching cost is a
    /// difference of medians.
    pub match_ms_min: Option<f64>,
}

impl fmt::Display for GpuBench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BENCH algo={} backend=cuda device=\"{}\" size={}x{} features={} extract_ms_median={:.4} extract_ms_min={:.4} upload_ms_median={:.4} match_ms_median={:.4}",
            self.algo,
            self.device,
            self.width,
            self.height,
            self.features,
            self.extract_ms_median,
            self.extract_ms_min,
            self.upload_ms_median,
            self.match_ms_median
        )
    }
}

impl GpuBench {
    /// `algo`'s extraction figures from `timed` frames of `frame`'s size on `device`;
    /// no matching (the caller fills it in).
    fn extraction(
        algo: &'static str,
        device: String,
        frame: &GrayImage,
        timed: &mut Timings,
    ) -> Self {
        let extract_ms_median = median(&mut timed.extract);
        Self {
            algo,
            device,
            width: frame.width(),
            height: frame.height(),
            features: timed.features,
            // `median` sorted the samples.
            extract_ms_min: timed.extract.first().copied().unwrap_or(f64::NAN),
            extract_ms_median,
            upload_ms_median: median(&mut timed.upload),
            match_ms_median: f64::NAN,
            match_ms_min: None,
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// GPU-event timings of `iterations` frames rotating over `frames`, after `warmup`.
struct Timings {
    extract: Vec<f64>,
    upload: Vec<f64>,
    features: usize,
}

fn time_frames(
    frames: &[GrayImage],
    warmup: usize,
    iterations: usize,
    mut frame: impl FnMut(&GrayImage) -> Result<(Features, FrameTiming)>,
) -> Result<Timings> {
    let mut timings = Timings {
        extract: Vec::new(),
        upload: Vec::new(),
        features: 0,
    };
    for i in 0..warmup + iterations {
        let (f, t) = frame(&frames[i % frames.len()])?;
        if i >= warmup {
            timings.extract.push(f64::from(t.extract_ms));
            timings.upload.push(f64::from(t.upload_ms));
            timings.features = timings.features.max(f.len());
        }
    }
    Ok(timings)
}

fn first_frame(frames: &[GrayImage]) -> Result<&GrayImage> {
    frames
        .first()
        .ok_or_else(|| Error::Image(ImageError::Invalid("no frame to time".into())))
}

/// Times `iterations` frames rotating over `frames` (all one size) after `warmup`
/// frames, first alone, then with the first frame's descriptors as resident train set.
pub fn bench_orb(
    config: &OrbConfig,
    setup: GpuSetup,
    frames: &[GrayImage],
    warmup: usize,
    iterations: usize,
) -> Result<GpuBench> {
    let mut gpu = setup.open_orb(config)?;
    let first = first_frame(frames)?;
    let run = |gpu: &mut CudaOrbExtractor| {
        time_frames(frames, warmup, iterations, |image| {
            let f = gpu.extract(image)?;
            Ok((f, gpu.last_timing()))
        })
    };
    let mut alone = run(&mut gpu)?;
    let train = gpu.extract(first)?;
    gpu.set_train(Some(&train.descriptors))?;
    let mut fused = run(&mut gpu)?;
    let bench = GpuBench::extraction("orb", gpu.device_name(), first, &mut alone);
    Ok(GpuBench {
        match_ms_median: (median(&mut fused.extract) - bench.extract_ms_median).max(0.0),
        ..bench
    })
}

/// ORB frames back to back on the wall clock, as a stream of camera frames sees them:
/// median interval between consecutive results, host copy, upload and downloads
/// included.
#[derive(Clone, Copy, Debug)]
pub struct Throughput {
    /// One frame at a time (`extract`).
    pub serial_ms_per_frame: f64,
    /// `submit_frame`: frame N+1 copied and uploaded while N computes.
    pub pipelined_ms_per_frame: f64,
}

/// Median wall-clock interval between consecutive results of `frame` over
/// `iterations` frames rotating over `frames`, after `warmup` frames.
fn result_interval_ms(
    frames: &[GrayImage],
    warmup: usize,
    iterations: usize,
    mut frame: impl FnMut(&GrayImage) -> Result<Option<Features>>,
) -> Result<f64> {
    let mut intervals = Vec::with_capacity(iterations);
    let mut last = Instant::now();
    for i in 0..warmup + iterations {
        let result = frame(&frames[i % frames.len()])?;
        let now = Instant::now();
        if i >= warmup && result.is_some() {
            intervals.push((now - last).as_secs_f64() * 1e3);
        }
        last = now;
    }
    Ok(median(&mut intervals))
}

/// Streams `frames` through one extractor, first one frame at a time, then pipelined.
pub fn bench_orb_throughput(
    config: &OrbConfig,
    setup: GpuSetup,
    frames: &[GrayImage],
    warmup: usize,
    iterations: usize,
) -> Result<Throughput> {
    first_frame(frames)?;
    let mut gpu = setup.open_orb(config)?;
    let serial_ms_per_frame = result_interval_ms(frames, warmup, iterations, |image| {
        gpu.extract(image).map(Some)
    })?;
    let pipelined_ms_per_frame = result_interval_ms(frames, warmup, iterations, |image| {
        gpu.submit_frame(&image.as_raw())
    })?;
    gpu.finish_frame()?;
    Ok(Throughput {
        serial_ms_per_frame,
        pipelined_ms_per_frame,
    })
}

/// Contrast thresholds tried when matching a feature count: `sift.contrast_threshold`'s
/// range, searched by bisection of its logarithm.
const SIFT_CONTRAST_RANGE: (f64, f64) = (1e-6, 1.0);
const SIFT_CONTRAST_STEPS: usize = 24;
/// A count within this share of the target ends the search early.
const SIFT_FEATURES_TOLERANCE: f64 = 0.002;

/// A SIFT configuration whose `contrast_threshold` makes `frames` give `target` features
/// a frame on average (the measure CudaSift's bench prints), so that two extractors are
/// compared at matched feature counts; returns it with the mean it gives. Fewer features
/// as the threshold rises: bisection of the threshold's logarithm, keeping the closest.
pub fn sift_config_for_features(
    config: &SiftConfig,
    memory: MemoryMode,
    sm_limit: Option<u32>,
    frames: &[GrayImage],
    target: usize,
) -> Result<(SiftConfig, f64)> {
    first_frame(frames)?;
    let mean_features = |contrast_threshold: f64| -> Result<f64> {
        let config = SiftConfig {
            contrast_threshold,
            ..config.clone()
        };
        let mut gpu = CudaSiftExtractor::new(config, memory, sm_limit)?;
        let mut total = 0;
        for frame in frames {
            total += gpu.extract(frame)?.len();
        }
        Ok(total as f64 / frames.len() as f64)
    };
    let target_f = target as f64;
    let (mut low, mut high) = (SIFT_CONTRAST_RANGE.0.ln(), SIFT_CONTRAST_RANGE.1.ln());
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..SIFT_CONTRAST_STEPS {
        let middle = 0.5 * (low + high);
        let contrast = middle.exp();
        let mean = mean_features(contrast)?;
        if best.is_none_or(|(_, m)| (mean - target_f).abs() < (m - target_f).abs()) {
            best = Some((contrast, mean));
        }
        if (mean - target_f).abs() <= SIFT_FEATURES_TOLERANCE * target_f {
            break;
        }
        if mean > target_f {
            low = middle;
        } else {
            high = middle;
        }
    }
    let (contrast_threshold, mean) = best.unwrap_or((config.contrast_threshold, f64::NAN));
    Ok((
        SiftConfig {
            contrast_threshold,
            ..config.clone()
        },
        mean,
    ))
}

/// Times SIFT extraction as [`bench_orb`] does, then `matcher` on the first frame's
/// features against themselves (wall clock, up to [`SIFT_MATCH_RUNS`] runs).
pub fn bench_sift(
    config: &SiftConfig,
    setup: GpuSetup,
    frames: &[GrayImage],
    warmup: usize,
    iterations: usize,
    matcher: &mut dyn Matcher,
) -> Result<GpuBench> {
    let mut gpu = setup.open_sift(config)?;
    let first = first_frame(frames)?;
    let mut timed = time_frames(frames, warmup, iterations, |image| {
        let f = gpu.extract(image)?;
        Ok((f, gpu.last_timing()))
    })?;
    let features = gpu.extract(first)?;
    matcher.match_features(&features, &features)?;
    let mut matching = Vec::new();
    let started = Instant::now();
    while matching.len() < SIFT_MATCH_RUNS.min(iterations.max(1))
        && (matching.len() < SIFT_MATCH_MIN_RUNS
            || started.elapsed().as_secs_f64() < SIFT_MATCH_BUDGET_S)
    {
        let start = Instant::now();
        matcher.match_features(&features, &features)?;
        matching.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(GpuBench {
        match_ms_median: median(&mut matching),
        match_ms_min: matching.iter().copied().reduce(f64::min),
        ..GpuBench::extraction("sift", gpu.device_name(), first, &mut timed)
    })
}
