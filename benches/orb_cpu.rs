//! CPU reference ORB (2000 features, default config) on frames made from
//! tests/data/graf1.png, with one thread and with all threads.
//!
//! The frames are also written to target/bench-frames/ so that
//! perf/opencv_orb.py times OpenCV on the very same pixels.

use std::path::Path;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use image::imageops::{resize, FilterType};
use orbsift::cpu::orb::OrbExtractor;
use orbsift::{Extractor, GrayImage, OrbConfig};

const SIZES: [(u32, u32); 2] = [(640, 480), (1920, 1080)];

fn frame(width: u32, height: u32) -> GrayImage {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = GrayImage::open(&root.join("tests/data/graf1.png")).expect("graf1.png");
    let grey = image::GrayImage::from_raw(
        source.width() as u32,
        source.height() as u32,
        source.into_data(),
    )
    .expect("grey buffer");
    let scaled = resize(&grey, width, height, FilterType::Triangle);
    let dir = root.join("target/bench-frames");
    std::fs::create_dir_all(&dir).expect("target/bench-frames");
    scaled
        .save(dir.join(format!("graf1_{width}x{height}.png")))
        .expect("save frame");
    GrayImage::new(width as usize, height as usize, scaled.into_raw()).expect("frame")
}

fn orb_cpu(c: &mut Criterion) {
    let all = rayon::current_num_threads();
    let mut group = c.benchmark_group("orb_cpu");
    group.sample_size(30);
    for (width, height) in SIZES {
        let image = frame(width, height);
        for threads in [1, all] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("thread pool");
            let mut extractor = OrbExtractor::new(OrbConfig::default()).expect("config");
            let id = BenchmarkId::new(format!("{width}x{height}"), format!("{threads} threads"));
            group.bench_function(id, |b| {
                pool.install(|| b.iter(|| extractor.extract(&image).expect("extract")))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, orb_cpu);
criterion_main!(benches);
