//! The CUDA SIFT matcher at the target size, 5000 x 7000 descriptors, with the
//! cross-check (the default). The descriptors are CPU SIFT of two real image pairs of
//! tests/data: queries the strongest 2500 of graf1 and of leuvenA, train descriptors
//! the strongest 4000 of graf3 and 3000 of leuvenB, so that true matches exist. These
//! 800x640 and 751x563 images hold fewer than 4000 keypoints at the default contrast
//! threshold (upscaling them adds none), so it is lowered to 0.01.
//!
//! Two figures: `kernels` is the GPU event time of the matching kernels on descriptors
//! resident on the GPU; `with_transfers` is `Matcher::match_features` end to end (upload,
//! kernels, download, ratio test on the host), by the wall clock. Criterion reports its
//! estimates; the `BENCH` lines give the median of every timed iteration (criterion's
//! warm-up included). Run by scripts/gpu-check.sh (`cargo bench --bench cuda_sift_match`).

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use orbsift::cpu::sift::SiftExtractor;
use orbsift::cuda::{CudaL2Matcher, CudaMatcher};
use orbsift::types::Descriptors;
use orbsift::{DescriptorKind, Features, GrayImage, Keypoints, MatchConfig, Matcher, SiftConfig};

const QUERY: [(&str, u32); 2] = [("graf1.png", 2500), ("leuvenA.jpg", 2500)];
const TRAIN: [(&str, u32); 2] = [("graf3.png", 4000), ("leuvenB.jpg", 3000)];

/// The strongest `count` CPU SIFT features of each image, descriptors concatenated.
fn features(images: &[(&str, u32)]) -> Features {
    let mut descriptors = Vec::new();
    for &(name, count) in images {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name);
        let image = GrayImage::open(&path).expect("bench image");
        let sift = SiftExtractor::new(SiftConfig {
            contrast_threshold: 0.01,
            max_features: count,
            ..SiftConfig::default()
        })
        .unwrap();
        let features = sift.detect_and_describe(&image);
        assert_eq!(
            features.len(),
            count as usize,
            "{name}: too few SIFT features"
        );
        descriptors.extend(features.descriptors.data);
    }
    let n = descriptors.len() / DescriptorKind::Sift128U8.bytes();
    let mut keypoints = Keypoints::with_capacity(n);
    for _ in 0..n {
        keypoints.push(0.0, 0.0, 1.0, 0.0, 0.0, 0);
    }
    Features {
        width: 1,
        height: 1,
        keypoints,
        descriptors: Descriptors {
            kind: DescriptorKind::Sift128U8,
            data: descriptors,
        },
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn bench(c: &mut Criterion) {
    // `cargo test --all-targets` runs this once without `--bench` (criterion's test
    // mode), on machines without a GPU too: there it says so and times nothing.
    if let Err(reason) = orbsift::cuda::availability() {
        assert!(
            !std::env::args().any(|arg| arg == "--bench"),
            "cuda_sift_match needs a GPU: {reason}"
        );
        println!("cuda_sift_match: not timed in test mode without a GPU ({reason})");
        return;
    }
    let (query, train) = (features(&QUERY), features(&TRAIN));
    let (n_query, n_train) = (query.len(), train.len());
    let config = MatchConfig::default();
    let mut matcher = CudaMatcher::<CudaL2Matcher>::new(config.clone(), None).expect("a CUDA GPU");
    let search = matcher.search();
    let device = search.device_name().to_owned();
    let resident_query = search.upload(&query.descriptors, "query").unwrap();
    let resident_train = search.upload(&train.descriptors, "train").unwrap();

    let mut group = c.benchmark_group("cuda_sift_match");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    // Kernel times with the cross-check (the default), then without.
    let mut kernel_ms = [Vec::new(), Vec::new()];
    for (mutual, samples) in [true, false].into_iter().zip(&mut kernel_ms) {
        let name = format!("kernels_{n_query}x{n_train}_cross_check_{mutual}");
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let search = matcher.search();
                    search
                        .knn2_resident(&resident_query, &resident_train, mutual)
                        .unwrap();
                    let ms = f64::from(search.last_kernel_ms().unwrap());
                    samples.push(ms);
                    total += Duration::from_secs_f64(ms / 1e3);
                }
                total
            })
        });
    }
    let mut end_to_end_ms = Vec::new();
    let mut matches = 0;
    group.bench_function(format!("with_transfers_{n_query}x{n_train}"), |b| {
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
    let [with_cross_check, without] = &mut kernel_ms;
    println!(
        "BENCH sift_match backend=cuda device=\"{device}\" query={n_query} train={n_train} kernels_ms_median={:.4} (cross-check, n={}) kernels_no_cross_check_ms_median={:.4} (n={}) with_transfers_ms_median={:.4} (cross-check, n={}) matches={matches}",
        median(with_cross_check),
        with_cross_check.len(),
        median(without),
        without.len(),
        median(&mut end_to_end_ms),
        end_to_end_ms.len(),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
