//! `orbsift bench`: a table for people and one `BENCH ...` line per size for scripts.
//!
//! Each call is timed with a wall clock. A backend that uploads frames reports the
//! upload itself: the CUDA backend's GPU-event timing (`orbsift::cuda::bench`) plugs
//! in as another way to fill a [`Row`].

use std::io::Write;
use std::time::Instant;

use orbsift::{Config, Extractor, GrayImage, Matcher, Result};

const SIZES: [(usize, usize); 4] = [(640, 480), (1280, 960), (1920, 1080), (3840, 2160)];
const WARM_UP_RUNS: usize = 3;

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
    match_min: f64,
}

/// Times extraction and matching at every size of [`SIZES`], `source` resized.
pub fn run(config: &Config, source: &GrayImage, iterations: usize) -> Result<()> {
    let mut extractor = orbsift::create_extractor(config)?;
    let backend = extractor.backend_name();
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
    for (width, height) in SIZES {
        let frame = resized(source, width, height)?;
        let row = timed_row(extractor.as_mut(), matcher.as_mut(), &frame, iterations)?;
        print(format!(
            "{:>10} {:>9} {:>11.3} ms {:>8.3} ms {:>11.3} ms {:>9.3} ms {:>6.3} ms",
            format!("{width}x{height}"),
            row.features,
            row.extract_median,
            row.extract_min,
            row.upload_median,
            row.match_median,
            row.match_min
        ))?;
        rows.push(row);
    }
    for row in rows {
        print(format!(
            "BENCH algo={algo} backend={backend} device=\"{}\" size={}x{} features={} \
             extract_ms_median={:.3} extract_ms_min={:.3} upload_ms_median={:.3} match_ms_median={:.3}",
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

/// Extraction, then matching the frame's features against themselves, on the wall
/// clock; upload is 0, as it is on the CPU.
fn timed_row(
    extractor: &mut dyn Extractor,
    matcher: &mut dyn Matcher,
    frame: &GrayImage,
    iterations: usize,
) -> Result<Row> {
    let mut features = extractor.extract(frame)?;
    for _ in 1..WARM_UP_RUNS {
        features = extractor.extract(frame)?;
    }
    matcher.match_features(&features, &features)?;
    let (mut extract, mut matching) = (Vec::new(), Vec::new());
    for _ in 0..iterations {
        let start = Instant::now();
        features = extractor.extract(frame)?;
        extract.push(elapsed_ms(start));
        let start = Instant::now();
        matcher.match_features(&features, &features)?;
        matching.push(elapsed_ms(start));
    }
    Ok(Row {
        device: extractor.device_name(),
        width: frame.width(),
        height: frame.height(),
        features: features.len(),
        extract_median: median(&mut extract),
        extract_min: minimum(&extract),
        upload_median: 0.0,
        match_median: median(&mut matching),
        match_min: minimum(&matching),
    })
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

/// `source` stretched to `width` x `height` with bilinear filtering.
fn resized(source: &GrayImage, width: usize, height: usize) -> Result<GrayImage> {
    let buffer = image::GrayImage::from_raw(
        source.width() as u32,
        source.height() as u32,
        source.data().to_vec(),
    )
    .expect("a GrayImage holds width * height bytes");
    let out = image::imageops::resize(
        &buffer,
        width as u32,
        height as u32,
        image::imageops::FilterType::Triangle,
    );
    GrayImage::new(width, height, out.into_raw())
}
