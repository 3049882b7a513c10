//! Node latency: an image message received → its Features message published, as
//! `orbsift_node` does it (conversion to grey, extraction, message, CDR encoding),
//! CPU backend, 640x480, without the DDS transfer itself.
//!
//! `cargo bench --bench node_latency`

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use orbsift::config::MatchMode;
use orbsift::msgs::{self, DiagnosticArray, Header, Image, Time};
use orbsift::node::{Camera, Frame, Node, Outputs};
use orbsift::{Backend, Config, GrayImage, MatchConfig, Result};

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
}

fn image_message() -> Image {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/basketball1.png");
    let gray = GrayImage::open(&path).expect("tests/data/basketball1.png");
    assert_eq!((gray.width(), gray.height()), (640, 480));
    Image {
        header: Header {
            stamp: Time { sec: 1, nanosec: 0 },
            frame_id: "camera".into(),
        },
        height: 480,
        width: 640,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: 640,
        data: gray.into_data(),
    }
}

fn node_config() -> Config {
    Config {
        backend: Backend::Cpu,
        matching: MatchConfig {
            mode: MatchMode::None,
            ..MatchConfig::default()
        },
        ..Config::default()
    }
}

fn latency(c: &mut Criterion) {
    let mut node = Node::new("bench", node_config()).expect("CPU ORB node");
    let image = image_message();
    let mut group = c.benchmark_group("node");
    group.sample_size(30);
    group.bench_function(
        "mono8 640x480 received -> Features published (cpu orb)",
        |b| {
            b.iter_batched(
                || image.clone(),
                |image| {
                    let frame = Frame {
                        camera: Camera::Mono,
                        image,
                        received: Instant::now(),
                    };
                    node.handle(frame, &EncodingOutputs)
                },
                criterion::BatchSize::LargeInput,
            )
        },
    );
    // The same frame through the extractor alone: the rest is the node's overhead.
    let gray = msgs::gray_from_image(&image, u64::MAX).expect("a valid frame");
    let mut extractor = orbsift::create_extractor(&node_config()).expect("CPU ORB");
    group.bench_function("extraction alone, 640x480 (cpu orb)", |b| {
        b.iter(|| extractor.extract(black_box(&gray)))
    });
    group.finish();
}

criterion_group!(benches, latency);
criterion_main!(benches);
