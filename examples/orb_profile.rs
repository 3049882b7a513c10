//! Runs the CPU ORB extractor on one thread over a frame made from
//! tests/data/graf1.png, for instruction counts under
//! `valgrind --tool=callgrind` (repeatable on a shared machine, unlike times).
//!
//! `cargo build --release --example orb_profile`, then
//! `valgrind --tool=callgrind target/release/examples/orb_profile 1920x1080 grid 3`.

use std::path::Path;

use orbsift::config::Distribution;
use orbsift::cpu::orb::OrbExtractor;
use orbsift::{Extractor, GrayImage, OrbConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some((width, height, distribution, iterations)) = parse(&args) else {
        eprintln!("usage: orb_profile WIDTHxHEIGHT grid|top_response ITERATIONS");
        std::process::exit(2);
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = GrayImage::open(&root.join("tests/data/graf1.png")).expect("graf1.png");
    let frame = source
        .resized(width as usize, height as usize)
        .expect("frame");
    let config = OrbConfig {
        distribution,
        ..OrbConfig::default()
    };
    let mut extractor = OrbExtractor::new(config).expect("config");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()
        .expect("one-thread pool");
    pool.install(|| {
        for _ in 0..iterations {
            let features = extractor.extract(&frame).expect("extract");
            std::hint::black_box(features);
        }
    });
}

fn parse(args: &[String]) -> Option<(u32, u32, Distribution, usize)> {
    let [_, size, distribution, iterations] = args else {
        return None;
    };
    let (width, height) = size.split_once('x')?;
    let distribution = match distribution.as_str() {
        "grid" => Distribution::Grid,
        "top_response" => Distribution::TopResponse,
        _ => return None,
    };
    Some((
        width.parse().ok()?,
        height.parse().ok()?,
        distribution,
        iterations.parse().ok()?,
    ))
}
