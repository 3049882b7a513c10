//! The CUDA SIFT matcher at the target size, 5000 x 7000 descriptors, with the
//! cross-check (the default): the strongest 5000 CPU SIFT features of graf1 and 7000
//! of graf3, both upscaled 2x (1600x1280, then SIFT's own first octave -1).
//!
//! Two figures: `kernels` is the GPU event time of the matching kernels on descriptors
//! resident on the GPU; `with_transfers` is `Matcher::match_features` end to end (upload,
//! kernels, download, ratio test on the host), by the wall clock. Criterion reports its
//! estimates; the `BENCH` lines give the median of every timed iteration. Run by
//! scripts/gpu-check.sh (`cargo bench --bench cuda_sift_match`).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use image::imageops::{resize, FilterType};
use orbsift::cpu::sift::SiftExtractor;
use orbsift::cuda::{CudaL2Matcher, CudaMatcher};
use orbsift::{Features, GrayImage, MatchConfig, Matcher, SiftConfig};

const QUERY: usize = 5000;
const TRAIN: usize = 7000;

/// The strongest `count` CPU SIFT features of `name` upscaled 2x.
fn features(name: &str, count: usize) -> Features {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let source = GrayImage::open(&path).expect("bench image");
    let (width, height) = (2 * source.width() as u32, 2 * source.height() as u32);
    let buffer = image::GrayImage::from_raw(
        source.width() as u32,
        source.height() as u32,
        source.into_data(),
    )
    .expect("sizes agree");
    let upscaled = resize(&buffer, width, height, FilterType::Triangle);
    let image = GrayImage::new(width as usize, height as usize, upscaled.into_raw()).unwrap();
    let sift = SiftExtractor::new(SiftConfig {
        max_features: count as u32,
        ..SiftConfig::default()
    })
    .unwrap();
    let features = sift.detect_and_describe(&image);
    assert_eq!(features.len(), count, "{name}: too few SIFT features");
    features
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn bench(c: &mut Criterion) {
    let (query, train) = (features("graf1.png", QUERY), features("graf3.png", TRAIN));
    let config = MatchConfig::default();
    let mut matcher = CudaMatcher::<CudaL2Matcher>::new(config.clone()).expect("a CUDA GPU");
    let search = matcher.search();
    let device = search.device_name().to_owned();
    let resident_query = search.upload(&query.descriptors, "query").unwrap();
    let resident_train = search.upload(&train.descriptors, "train").unwrap();

    let mut group = c.benchmark_group("cuda_sift_match");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let mut kernel_ms = Vec::new();
    group.bench_function(format!("kernels_{QUERY}x{TRAIN}"), |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let search = matcher.search();
                search
                    .knn2_resident(&resident_query, &resident_train, config.cross_check)
                    .unwrap();
                let ms = search.last_kernel_ms().unwrap();
                kernel_ms.push(f64::from(ms));
                total += Duration::from_secs_f64(f64::from(ms) / 1e3);
            }
            total
        })
    });
    let mut end_to_end_ms = Vec::new();
    let mut matches = 0;
    group.bench_function(format!("with_transfers_{QUERY}x{TRAIN}"), |b| {
        b.iter_custom(|iterations| {
            let start = Instant::now();
            for _ in 0..iterations {
                let one = Instant::now();
                matches = matcher.match_features(&query, &train).unwrap().len();
                end_to_end_ms.push(one.elapsed().as_secs_f64() * 1e3);
            }
            start.elapsed()
        })
    });
    group.finish();
    println!(
        "BENCH sift_match backend=cuda device=\"{device}\" query={QUERY} train={TRAIN} cross_check={} matches={matches} kernels_ms_median={:.4} (n={}) with_transfers_ms_median={:.4} (n={})",
        config.cross_check,
        median(&mut kernel_ms),
        kernel_ms.len(),
        median(&mut end_to_end_ms),
        end_to_end_ms.len(),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
