//! CPU SIFT (OpenCV defaults, upscaled) at 640x480 and 1920x1080 from real images.
//! The inputs are also written to target/sift_bench_WxH.pgm so that
//! benches/opencv_sift.py times OpenCV on the very same pixels.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use orbsift::cpu::sift::SiftExtractor;
use orbsift::{GrayImage, SiftConfig};

fn input(root: &Path, name: &str, width: u32, height: u32) -> GrayImage {
    let source = GrayImage::open(&root.join("tests/data").join(name)).expect("bench image");
    let image = source
        .resized(width as usize, height as usize)
        .expect("bench frame");
    let out = root.join(format!("target/sift_bench_{width}x{height}.pgm"));
    image.save(&out).expect("bench input written");
    image
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sift = SiftExtractor::new(SiftConfig::default()).unwrap();
    let mut group = c.benchmark_group("sift_cpu");
    group.sample_size(10);
    for (name, w, h) in [("basketball1.png", 640, 480), ("graf1.png", 1920, 1080)] {
        let image = input(root, name, w, h);
        let n = sift.detect_and_describe(&image).len();
        println!(
            "{w}x{h}: {n} keypoints, {} rayon threads",
            rayon::current_num_threads()
        );
        group.bench_function(format!("{w}x{h}"), |b| {
            b.iter(|| sift.detect_and_describe(&image))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
