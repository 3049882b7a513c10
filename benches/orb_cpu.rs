//! CPU reference ORB (2000 features) on frames made from tests/data/graf1.png.
//!
//! `orb_cpu` is wall time with one thread and with all threads (default config).
//! `orb_cpu_thread_time` is the CPU time of the one thread that runs extraction
//! (CLOCK_THREAD_CPUTIME_ID): on a machine shared with other jobs it is the fair
//! figure to set beside OpenCV's, which perf/opencv_orb.py measures the same way.
//! The frames are written to target/bench-frames/ so OpenCV sees the same pixels.

use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use orbsift::config::Distribution;
use orbsift::cpu::orb::OrbExtractor;
use orbsift::{Extractor, GrayImage, OrbConfig};

const SIZES: [(u32, u32); 2] = [(640, 480), (1920, 1080)];

fn frame(width: u32, height: u32) -> GrayImage {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = GrayImage::open(&root.join("tests/data/graf1.png")).expect("graf1.png");
    let scaled = source
        .resized(width as usize, height as usize)
        .expect("bench frame");
    let dir = root.join("target/bench-frames");
    std::fs::create_dir_all(&dir).expect("target/bench-frames");
    scaled
        .save(&dir.join(format!("graf1_{width}x{height}.png")))
        .expect("save frame");
    scaled
}

/// One thread: the calling thread itself, which does all the work (a thread can
/// join one such pool in its life). All threads: a plain pool.
fn pools() -> (rayon::ThreadPool, rayon::ThreadPool) {
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()
        .expect("one-thread pool");
    let all = rayon::ThreadPoolBuilder::new()
        .build()
        .expect("thread pool");
    (single, all)
}

fn thread_cpu_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

fn orb_cpu(c: &mut Criterion) {
    let (single, all) = pools();
    let mut group = c.benchmark_group("orb_cpu");
    group.sample_size(30);
    for (width, height) in SIZES {
        let image = frame(width, height);
        for pool in [&single, &all] {
            let mut extractor = OrbExtractor::new(OrbConfig::default()).expect("config");
            let threads = pool.current_num_threads();
            let id = BenchmarkId::new(format!("{width}x{height}"), format!("{threads} threads"));
            group.bench_function(id, |b| {
                pool.install(|| b.iter(|| extractor.extract(&image).expect("extract")))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("orb_cpu_thread_time");
    group.sample_size(30);
    for (width, height) in SIZES {
        let image = frame(width, height);
        for distribution in [Distribution::Grid, Distribution::TopResponse] {
            let config = OrbConfig {
                distribution,
                ..OrbConfig::default()
            };
            let mut extractor = OrbExtractor::new(config).expect("config");
            let id = BenchmarkId::new(format!("{width}x{height}"), format!("{distribution:?}"));
            group.bench_function(id, |b| {
                single.install(|| {
                    b.iter_custom(|iterations| {
                        let start = thread_cpu_time();
                        for _ in 0..iterations {
                            extractor.extract(&image).expect("extract");
                        }
                        thread_cpu_time() - start
                    })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, orb_cpu);
criterion_main!(benches);
