//! Node latency: an image message received → its Features message published, as
//! `orbsift_node` does it (conversion to grey, extraction, message, CDR encoding),
//! without the DDS transfer itself: CPU backend at 640x480, and CUDA at 1920x1080
//! where a GPU is usable (scripts/gpu-check.sh runs it there).
//!
//! `cargo bench --bench node_latency`; `ORBSIFT_DATA_DIR` points at tests/data when
//! the bench binary runs away from its source tree.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use orbsift::config::{MatchMode, NodeConfig, NodeMatchConfig};
use orbsift::msgs::{self, DiagnosticArray, Header, Image, Time};
use orbsift::node::{Camera, Frame, Node, Outputs};
use orbsift::{Backend, Config, GrayImage, Result};

/// Encodes every message to CDR, the work a transport does before sending.
struct EncodingOutputs;

impl Outputs for EncodingOutputs {
    fn publish_features(&self, message: msgs::Features) -> Result<()> {
        black_box(msgs::encode(&message)?);
        Ok(())
    }
    fn publish_matches(&self, message: msgs::Matches) -> Result<()> {
        black_box(msgs::encode(&message)?);
        Ok(())
    }
    fn publish_diagnostics(&self, message: DiagnosticArray) -> Result<()> {
        black_box(msgs::encode(&message)?);
        Ok(())
    }
    fn publish_debug_image(&self, message: Image) -> Result<()> {
        black_box(msgs::encode(&message)?);
        Ok(())
    }
    fn wants_debug_image(&self) -> bool {
        false
    }
    fn publish_image(&self, message: Image) -> Result<()> {
        black_box(msgs::encode(&message)?);
        Ok(())
    }
    fn features_subscribed(&self) -> bool {
        true
    }
}

fn data_dir() -> PathBuf {
    std::env::var_os("ORBSIFT_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data"))
}

/// A real frame of `width x height`: basketball1 is 640x480, other sizes are graf1 resized.
fn image_message(width: u32, height: u32) -> Image {
    let gray = if (width, height) == (640, 480) {
        GrayImage::open(&data_dir().join("basketball1.png")).expect("basketball1.png")
    } else {
        let graf = image::open(data_dir().join("graf1.png")).expect("graf1.png");
        let resized = graf
            .resize_exact(width, height, image::imageops::FilterType::Triangle)
            .into_luma8();
        GrayImage::new(width as usize, height as usize, resized.into_raw()).expect("resized")
    };
    Image {
        header: Header {
            stamp: Time { sec: 1, nanosec: 0 },
            frame_id: "camera".into(),
        },
        height,
        width,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: width,
        data: gray.into_data(),
    }
}

fn node_config(backend: Backend) -> NodeConfig {
    NodeConfig {
        library: Config {
            backend,
            ..Config::default()
        },
        matching: NodeMatchConfig {
            mode: MatchMode::None,
            ..NodeMatchConfig::default()
        },
        ..NodeConfig::default()
    }
}

/// Times one backend at one size: the node's whole path, then extraction alone.
fn latency_of(c: &mut Criterion, backend: Backend, (width, height): (u32, u32)) {
    let config = node_config(backend);
    let mut node = match Node::new("bench", config.clone()) {
        Ok(node) => node,
        Err(error) => {
            println!("node/{backend:?} {width}x{height}: not measured: {error}");
            return;
        }
    };
    let image = image_message(width, height);
    let backend_name = node_backend_name(&config.library);
    let mut group = c.benchmark_group("node");
    group.sample_size(30);
    group.bench_function(
        format!("mono8 {width}x{height} received -> Features published ({backend_name} orb)"),
        |b| {
            b.iter_batched(
                || image.clone(),
                |image| node.handle(Frame::from_image(Camera::Mono, image), &EncodingOutputs),
                criterion::BatchSize::LargeInput,
            )
        },
    );
    // The same frame through the extractor alone: the rest is the node's overhead.
    let gray = msgs::gray_from_image(&image, u64::MAX).expect("a valid frame");
    let mut extractor = orbsift::create_extractor(&config.library).expect("the node's extractor");
    group.bench_function(
        format!("extraction alone, {width}x{height} ({backend_name} orb)"),
        |b| b.iter(|| extractor.extract(black_box(&gray))),
    );
    group.finish();
}

fn node_backend_name(config: &Config) -> &'static str {
    orbsift::create_extractor(config)
        .map(|e| e.backend_name())
        .unwrap_or("none")
}

fn latency(c: &mut Criterion) {
    latency_of(c, Backend::Cpu, (640, 480));
    latency_of(c, Backend::Cuda, (1920, 1080));
}

criterion_group!(benches, latency);
criterion_main!(benches);
