//! `orbsift bench`: a table for people and one `BENCH ...` line per size for scripts.
//!
//! On the CPU each call is timed with a wall clock. On the CUDA backend the GPU's
//! events time extraction, upload and fused matching (`gpu_bench.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use orbsift::{Config, ConfigError, Error, Extractor, GrayImage, Matcher, Result};

/// The sizes timed unless `--size` names others.
pub const SIZES: [(usize, usize); 4] = [(640, 480), (1280, 960), (1920, 1080), (3840, 2160)];
const WARM_UP_RUNS: usize = 3;
/// The GPU reaches steady clocks and caches only after a few dozen frames.
#[cfg(feature = "cuda")]
const GPU_WARM_UP_RUNS: usize = 20;

/// The timings of one size, in milliseconds.
struct Row {
    device: String,
    width: usize,
    height: usize,
    features: usize,
    extract_median: f64,
    extract_min: f64,
    upload_median: f64,
    match_median: f64,
    /// None where no single matching run is timed (fused ORB matching is a
    /// difference of medians).
    match_min: Option<f64>,
    /// CUDA ORB streamed back to back (wall clock, median ms per frame): one frame at
    /// a time, and pipelined.
    serial_ms_per_frame: Option<f64>,
    pipelined_ms_per_frame: Option<f64>,
}

/// How `bench` runs.
pub struct Options {
    /// Timed runs per size, after warm-up.
    pub iterations: usize,
    /// The frame sizes to time, in order.
    pub sizes: Vec<(usize, usize)>,
    /// Confines the CUDA pipeline to that many SMs.
    pub sm_limit: Option<u32>,
    /// CUDA SIFT only: the features a frame to match at each size (one for all sizes,
    /// or one per size of `sizes`); empty: the configured contrast threshold.
    pub sift_features: Vec<u32>,
    /// Where to write the frames of every size as binary PGM, if anywhere.
    pub save_frames: Option<PathBuf>,
    /// CUDA: replay each frame's kernels as one captured graph (else launch one by one).
    pub graph: bool,
}

impl Options {
    /// The feature count to match at size number `size`, if any.
    fn sift_features_at(&self, size: usize) -> Option<usize> {
        let counts = &self.sift_features;
        counts
            .get(size)
            .or(counts.first().filter(|_| counts.len() == 1))
            .map(|&n| n as usize)
    }
}

/// The contrast threshold picked for a size and the mean features a frame it gives.
struct Matched {
    contrast_threshold: f64,
    features_mean: f64,
}

/// A frame size as `--size` takes it: `WIDTHxHEIGHT`, both at least 1.
pub fn parse_size(text: &str) -> std::result::Result<(usize, usize), String> {
    let side = |s: &str| s.parse::<usize>().ok().filter(|&n| n > 0);
    text.split_once('x')
        .and_then(|(w, h)| Some((side(w)?, side(h)?)))
        .ok_or_else(|| format!("`{text}` is no WIDTHxHEIGHT of positive integers"))
}

/// Times extraction and matching at every size of `options.sizes`, rotating over
/// `sources` resized.
pub fn run(config: &Config, sources: &[GrayImage], options: &Options) -> Result<()> {
    let (iterations, sm_limit) = (options.iterations, options.sm_limit);
    let mut extractor = orbsift::create_extractor(config)?;
    let backend = extractor.backend_name();
    let cuda_only = [
        ("--sm-limit", options.sm_limit.is_some()),
        ("--no-graph", !options.graph),
    ];
    if let Some((flag, _)) = cuda_only.iter().find(|(_, set)| *set && backend != "cuda") {
        return Err(Error::Config(ConfigError::Invalid {
            name: (*flag).into(),
            reason: format!("applies to the CUDA backend only, not {backend}"),
        }));
    }
    let counts = options.sift_features.len();
    if counts > 0 && (backend != "cuda" || config.algorithm.name() != "sift") {
        return Err(Error::Config(ConfigError::Invalid {
            name: "--sift-features".into(),
            reason: format!(
                "applies to SIFT on the CUDA backend only, not {} on {backend}",
                config.algorithm.name()
            ),
        }));
    }
    if counts > 1 && counts != options.sizes.len() {
        return Err(Error::Config(ConfigError::Invalid {
            name: "--sift-features".into(),
            reason: format!(
                "one count for every size or one per size ({}), not {counts}",
                options.sizes.len()
            ),
        }));
    }
    if let Some((width, height)) = options
        .sizes
        .iter()
        .find(|&&(w, h)| (w as u64).saturating_mul(h as u64) > config.max_image_pixels)
    {
        return Err(Error::Config(ConfigError::Invalid {
            name: "--size".into(),
            reason: format!(
                "{width}x{height} is more than max_image_pixels ({})",
                config.max_image_pixels
            ),
        }));
    }
    let mut matcher = orbsift::create_matcher(config)?;
    let mut out = std::io::stdout().lock();
    let mut print = |line: String| writeln!(out, "{line}").map_err(super::stdout_error);
    let algo = config.algorithm.name();
    print(format!(
        "{algo} on {backend} ({}), medians of {iterations} runs after warm-up",
        extractor.device_name()
    ))?;
    print(format!(
        "{:>10} {:>9} {:>14} {:>11} {:>14} {:>12} {:>9}",
        "size",
        "keypoints",
        "extract median",
        "extract min",
        "upload median",
        "match median",
        "match min"
    ))?;
    let mut rows = Vec::new();
    let mut matched = Vec::new();
    for (size, &(width, height)) in options.sizes.iter().enumerate() {
        let frames = sources
            .iter()
            .map(|source| source.resized(width, height))
            .collect::<Result<Vec<_>>>()?;
        if let Some(folder) = &options.save_frames {
            save_pgms(folder, &frames)?;
        }
        let row = if backend == "cuda" {
            let (config, at_count) = match options.sift_features_at(size) {
                Some(target) => {
                    let (config, matched) = match_features(config, sm_limit, &frames, target)?;
                    print(format!(
                        "{:>10} sift.contrast_threshold={:.5}: {:.0} features a frame (asked {target})",
                        format!("{width}x{height}"),
                        matched.contrast_threshold,
                        matched.features_mean
                    ))?;
                    (config, Some(matched))
                }
                None => (config.clone(), None),
            };
            matched.push(at_count);
            gpu_row(&config, options, &frames, matcher.as_mut())?
        } else {
            timed_row(extractor.as_mut(), matcher.as_mut(), &frames, iterations)?
        };
        let match_min = row
            .match_min
            .map_or_else(|| "-".into(), |ms| format!("{ms:.3} ms"));
        print(format!(
            "{:>10} {:>9} {:>11.3} ms {:>8.3} ms {:>11.3} ms {:>9.3} ms {:>9}",
            format!("{width}x{height}"),
            row.features,
            row.extract_median,
            row.extract_min,
            row.upload_median,
            row.match_median,
            match_min
        ))?;
        rows.push(row);
    }
    for row in &rows {
        if let (Some(serial), Some(pipelined)) =
            (row.serial_ms_per_frame, row.pipelined_ms_per_frame)
        {
            print(format!(
                "{:>10} streamed: {serial:.3} ms/frame one at a time, {pipelined:.3} ms/frame \
                 ({:.0} frames/s) pipelined",
                format!("{}x{}", row.width, row.height),
                1e3 / pipelined
            ))?;
        }
    }
    matched.resize_with(rows.len(), || None);
    for (row, matched) in rows.into_iter().zip(matched) {
        // Fields after match_ms_median are additions; scripts parse the ones before.
        let streamed = match (row.serial_ms_per_frame, row.pipelined_ms_per_frame) {
            (Some(serial), Some(pipelined)) => format!(
                " serial_ms_per_frame={serial:.3} pipelined_ms_per_frame={pipelined:.3} pipelined_fps={:.1}",
                1e3 / pipelined
            ),
            _ => String::new(),
        };
        let streamed = match matched {
            Some(m) => format!(
                "{streamed} contrast_threshold={:.5} features_mean={:.0}",
                m.contrast_threshold, m.features_mean
            ),
            None => streamed,
        };
        print(format!(
            "BENCH algo={algo} backend={backend} device=\"{}\" size={}x{} features={} \
             extract_ms_median={:.3} extract_ms_min={:.3} upload_ms_median={:.3} match_ms_median={:.3}{streamed}",
            row.device,
            row.width,
            row.height,
            row.features,
            row.extract_median,
            row.extract_min,
            row.upload_median,
            row.match_median
        ))?;
    }
    Ok(())
}

/// GPU-event timings on the CUDA backend: extraction from a frame already on the
/// GPU and the upload of the u8 frame; matching is ORB's fused matching against a
/// resident train set of the same size, or for SIFT `matcher` on the frame's features.
#[cfg(feature = "cuda")]
fn gpu_row(
    config: &Config,
    options: &Options,
    frames: &[GrayImage],
    matcher: &mut dyn Matcher,
) -> Result<Row> {
    use crate::gpu_bench::{bench_orb, bench_orb_throughput, bench_sift, GpuSetup};
    use orbsift::config::Algorithm;
    let (warmup, iterations) = (GPU_WARM_UP_RUNS, options.iterations);
    let setup = GpuSetup {
        memory: config.memory,
        sm_limit: options.sm_limit,
        graph: options.graph,
    };
    let mut streamed = None;
    let timed = match config.algorithm {
        Algorithm::Orb => {
            let orb = &config.orb;
            streamed = Some(bench_orb_throughput(
                orb, setup, frames, warmup, iterations,
            )?);
            bench_orb(orb, setup, frames, warmup, iterations)?
        }
        Algorithm::Sift => bench_sift(&config.sift, setup, frames, warmup, iterations, matcher)?,
    };
    Ok(Row {
        device: timed.device,
        width: timed.width,
        height: timed.height,
        features: timed.features,
        extract_median: timed.extract_ms_median,
        extract_min: timed.extract_ms_min,
        upload_median: timed.upload_ms_median,
        match_median: timed.match_ms_median,
        match_min: timed.match_ms_min,
        serial_ms_per_frame: streamed.map(|s| s.serial_ms_per_frame),
        pipelined_ms_per_frame: streamed.map(|s| s.pipelined_ms_per_frame),
    })
}

/// `config` with the SIFT contrast threshold at which `frames` give `target` features a
/// frame on average.
#[cfg(feature = "cuda")]
fn match_features(
    config: &Config,
    sm_limit: Option<u32>,
    frames: &[GrayImage],
    target: usize,
) -> Result<(Config, Matched)> {
    let (sift, features_mean) = crate::gpu_bench::sift_config_for_features(
        &config.sift,
        config.memory,
        sm_limit,
        frames,
        target,
    )?;
    let matched = Matched {
        contrast_threshold: sift.contrast_threshold,
        features_mean,
    };
    Ok((
        Config {
            sift,
            ..config.clone()
        },
        matched,
    ))
}

/// Without the `cuda` feature no extractor names itself "cuda".
#[cfg(not(feature = "cuda"))]
fn match_features(
    _: &Config,
    _: Option<u32>,
    _: &[GrayImage],
    _: usize,
) -> Result<(Config, Matched)> {
    Err(Error::Cuda(orbsift::CudaError::Unavailable(
        "built without the `cuda` feature".into(),
    )))
}

/// Without the `cuda` feature no extractor names itself "cuda".
#[cfg(not(feature = "cuda"))]
fn gpu_row(_: &Config, _: &Options, _: &[GrayImage], _: &mut dyn Matcher) -> Result<Row> {
    Err(Error::Cuda(orbsift::CudaError::Unavailable(
        "built without the `cuda` feature".into(),
    )))
}

/// Extraction, then matching the frame's features against themselves, on the wall
/// clock, rotating over `frames`; upload is 0, as it is on the CPU.
fn timed_row(
    extractor: &mut dyn Extractor,
    matcher: &mut dyn Matcher,
    frames: &[GrayImage],
    iterations: usize,
) -> Result<Row> {
    let frame = |i: usize| &frames[i % frames.len()];
    let mut features = extractor.extract(frame(0))?;
    for i in 1..WARM_UP_RUNS {
        features = extractor.extract(frame(i))?;
    }
    matcher.match_features(&features, &features)?;
    let (mut extract, mut matching) = (Vec::new(), Vec::new());
    for i in 0..iterations {
        let start = Instant::now();
        features = extractor.extract(frame(i))?;
        extract.push(elapsed_ms(start));
        let start = Instant::now();
        matcher.match_features(&features, &features)?;
        matching.push(elapsed_ms(start));
    }
    Ok(Row {
        device: extractor.device_name(),
        width: frames[0].width(),
        height: frames[0].height(),
        features: features.len(),
        extract_median: median(&mut extract),
        extract_min: minimum(&extract),
        upload_median: 0.0,
        match_median: median(&mut matching),
        match_min: Some(minimum(&matching)),
        serial_ms_per_frame: None,
        pipelined_ms_per_frame: None,
    })
}

/// Writes `frames` (all of one size) as `folder/WIDTHxHEIGHT-N.pgm`, binary PGM (P5).
fn save_pgms(folder: &Path, frames: &[GrayImage]) -> Result<()> {
    let write_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Write { path, source }
    };
    std::fs::create_dir_all(folder).map_err(write_error(folder))?;
    for (n, frame) in frames.iter().enumerate() {
        let (width, height) = (frame.width(), frame.height());
        let path = folder.join(format!("{width}x{height}-{n}.pgm"));
        let mut pgm = format!("P5\n{width} {height}\n255\n").into_bytes();
        pgm.extend_from_slice(frame.data());
        std::fs::write(&path, pgm).map_err(write_error(&path))?;
    }
    Ok(())
}

fn elapsed_ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn minimum(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}
