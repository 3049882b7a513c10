//! Node latency: an image message received → its Features and Matches messages
//! handed to the transport, as `orbsift_node` does it (checks, conversion to grey,
//! extraction, temporal matching, messages, CDR encoding), without the DDS transfer
//! itself: the CPU backend at 640x480, and CUDA at 1920x1080 (mono8, bgr8 and uyvy
//! frames, all SMs and 8, ORB and SIFT) where a GPU is usable (scripts/gpu-check.sh
//! runs it there). Each latency is the frame's own: its results are published before
//! the next frame comes. The throughput case streams 1080p camera frames back to back
//! through `Node::run`, where CUDA ORB overlaps each frame's upload with the kernels of
//! the frame before.
//!
//! `cargo bench --bench node_latency`; `ORBSIFT_DATA_DIR` points at tests/data when
//! the bench binary runs away from its source tree.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use orbsift::config::{MatchMode, NodeConfig, NodeMatchConfig};
use orbsift::image::Encoding;
use orbsift::msgs::{self, DiagnosticArray, Header, Image, Time};
use orbsift::node::{Camera, Frame, FrameSource, Next, Node, Outputs, Pixels};
use orbsift::{Algorithm, Backend, Config, Extractor, GrayImage, Matcher, Result};

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

/// One measured configuration of the node.
struct Case {
    backend: Backend,
    algorithm: Algorithm,
    size: (u32, u32),
    encoding: Encoding,
    matching: MatchMode,
    /// `--sm-limit`: the CUDA backend confined to this many SMs.
    sm_limit: Option<u32>,
}

impl Case {
    fn name(&self, backend_name: &str) -> String {
        let (width, height) = self.size;
        let matching = match self.matching {
            MatchMode::None => "Features",
            _ => "Features + temporal Matches",
        };
        let sms = self
            .sm_limit
            .map_or(String::new(), |n| format!(", {n} SMs"));
        format!(
            "{} {width}x{height} received -> {matching} published ({backend_name} {}{sms})",
            self.encoding.name(),
            self.algorithm.name()
        )
    }

    fn config(&self) -> NodeConfig {
        let mut library = Config {
            backend: self.backend,
            algorithm: self.algorithm,
            ..Config::default()
        };
        library.sift.upscale = false;
        NodeConfig {
            library,
            matching: NodeMatchConfig {
                mode: self.matching,
                ..NodeMatchConfig::default()
            },
            ..NodeConfig::default()
        }
    }
}

/// graf1 (a colour poster) resized to `width x height`, in `encoding`: the colour
/// encodings carry its colours, uyvy its BT.601 luma with neutral chroma.
fn image_message((width, height): (u32, u32), encoding: Encoding) -> Image {
    let graf = image::open(data_dir().join("graf1.png")).expect("graf1.png");
    let rgb = graf
        .resize_exact(width, height, image::imageops::FilterType::Triangle)
        .into_rgb8();
    let luma = |p: &image::Rgb<u8>| {
        let [r, g, b] = p.0.map(u32::from);
        ((4899 * r + 9617 * g + 1868 * b + 8192) >> 14) as u8
    };
    let data: Vec<u8> = match encoding {
        Encoding::Mono8 => rgb.pixels().map(luma).collect(),
        Encoding::Bgr8 => rgb.pixels().flat_map(|p| [p[2], p[1], p[0]]).collect(),
        Encoding::Uyvy => rgb.pixels().flat_map(|p| [128, luma(p)]).collect(),
        other => panic!("no bench frames in {other:?}"),
    };
    Image {
        header: Header {
            stamp: Time { sec: 1, nanosec: 0 },
            frame_id: "camera".into(),
        },
        height,
        width,
        encoding: encoding.name().into(),
        is_bigendian: 0,
        step: width * encoding.bytes_per_pixel() as u32,
        data: data.into(),
    }
}

/// The node `case` runs: its config's backends, or the CUDA ones on `sm_limit` SMs.
fn node_for(case: &Case) -> Result<Node> {
    let config = case.config();
    let Some(sm_limit) = case.sm_limit else {
        return Node::new("bench", config);
    };
    let (extractor, matcher) = confined_backends(&config.library, sm_limit)?;
    Ok(Node::with_backends("bench", config, extractor, matcher))
}

#[cfg(feature = "cuda")]
fn confined_backends(
    config: &Config,
    sm_limit: u32,
) -> Result<(Box<dyn Extractor>, Box<dyn Matcher>)> {
    let extractor =
        orbsift::cuda::CudaOrbExtractor::new(config.orb.clone(), config.memory, Some(sm_limit))?;
    Ok((Box::new(extractor), orbsift::create_matcher(config)?))
}

#[cfg(not(feature = "cuda"))]
fn confined_backends(_: &Config, _: u32) -> Result<(Box<dyn Extractor>, Box<dyn Matcher>)> {
    Err(orbsift::error::CudaError::Unavailable("built without the `cuda` feature".into()).into())
}

/// Times the node's whole path for `case`, from a freshly received frame each time.
fn latency_of(c: &mut Criterion, case: &Case) {
    let mut node = match node_for(case) {
        Ok(node) => node,
        Err(error) => {
            println!("{}: not measured: {error}", case.name("?"));
            return;
        }
    };
    let report = node.diagnostics(0, None);
    let backend_name = report.value("backend").unwrap_or("?").to_string();
    // Each frame is decoded from CDR as a transport decodes it: into the memory the
    // node's extractor offers (frame_memory), where the GPU uploads it from.
    let cdr = msgs::encode(&image_message(case.size, case.encoding)).expect("CDR");
    let mut group = c.benchmark_group("node");
    group.sample_size(30);
    group.bench_function(case.name(&backend_name), |b| {
        b.iter_batched(
            || msgs::decode::<Image>(&cdr).expect("an Image"),
            |image| {
                node.handle(Frame::from_image(Camera::Mono, image), &EncodingOutputs);
                // Latency: the frame's own results, not overlapped with a next frame.
                node.finish_in_flight(&EncodingOutputs);
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn latency(c: &mut Criterion) {
    let case = |backend, algorithm, size, encoding, matching, sm_limit| Case {
        backend,
        algorithm,
        size,
        encoding,
        matching,
        sm_limit,
    };
    let (vga, full_hd) = ((640, 480), (1920, 1080));
    use Algorithm::{Orb, Sift};
    use Backend::{Cpu, Cuda};
    use Encoding::{Bgr8, Mono8, Uyvy};
    use MatchMode::{None as Unmatched, Temporal};
    let cases = [
        case(Cpu, Orb, vga, Mono8, Unmatched, None),
        case(Cpu, Orb, vga, Mono8, Temporal, None),
        case(Cpu, Orb, full_hd, Bgr8, Unmatched, None),
        case(Cuda, Orb, full_hd, Mono8, Unmatched, None),
        case(Cuda, Orb, full_hd, Mono8, Temporal, None),
        case(Cuda, Orb, full_hd, Bgr8, Temporal, None),
        case(Cuda, Orb, full_hd, Uyvy, Temporal, None),
        case(Cuda, Orb, full_hd, Mono8, Temporal, Some(8)),
        case(Cuda, Sift, full_hd, Mono8, Temporal, None),
        case(Cuda, Sift, full_hd, Bgr8, Temporal, None),
    ];
    for case in &cases {
        latency_of(c, case);
    }
}

/// A camera read in-process: a capture thread hands grey frames (a fresh buffer each,
/// as a capture makes) through a short queue, as fast as the node takes them.
struct Camera1080p {
    frames: std::sync::mpsc::Receiver<GrayImage>,
    left: u64,
}

impl Camera1080p {
    fn start(count: u64) -> Self {
        let (sender, frames) = std::sync::mpsc::sync_channel(2);
        let image = image_message((1920, 1080), Encoding::Mono8);
        let gray = GrayImage::new(1920, 1080, image.data.into()).expect("1080p frame");
        std::thread::spawn(move || {
            for _ in 0..count {
                if sender.send(gray.clone()).is_err() {
                    break;
                }
            }
        });
        Self {
            frames,
            left: count,
        }
    }
}

impl FrameSource for Camera1080p {
    fn next(&mut self, deadline: Instant) -> Result<Next> {
        if self.left == 0 {
            return Ok(Next::End);
        }
        let timeout = deadline.saturating_duration_since(Instant::now());
        Ok(match self.frames.recv_timeout(timeout) {
            Ok(gray) => {
                self.left -= 1;
                let header = Header {
                    stamp: Time { sec: 1, nanosec: 0 },
                    frame_id: "camera".into(),
                };
                Next::Frame(Box::new(Frame::now(
                    Camera::Mono,
                    header,
                    Pixels::Gray(gray),
                )))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Next::Idle,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Next::End,
        })
    }
    fn dropped(&self) -> u64 {
        0
    }
}

/// Frames through one node as fast as a camera read in-process delivers them: the
/// time per frame of `Node::run` over a stream, where each frame's copy and upload
/// overlap the previous frame's kernels (CUDA ORB). Frames/s is its inverse.
fn throughput(c: &mut Criterion) {
    let case = Case {
        backend: Backend::Cuda,
        algorithm: Algorithm::Orb,
        size: (1920, 1080),
        encoding: Encoding::Mono8,
        matching: MatchMode::Temporal,
        sm_limit: None,
    };
    let mut node = match node_for(&case) {
        Ok(node) => node,
        Err(error) => {
            println!("camera frames through the node: not measured: {error}");
            return;
        }
    };
    let report = node.diagnostics(0, None);
    let backend_name = report.value("backend").unwrap_or("?").to_string();
    let stop = AtomicBool::new(false);
    let mut group = c.benchmark_group("node");
    group.sample_size(20);
    group.bench_function(
        format!("mono8 1920x1080 camera frames back to back -> Features + temporal Matches published, per frame ({backend_name} orb)"),
        |b| {
            b.iter_custom(|frames| {
                let mut camera = Camera1080p::start(frames);
                let start = Instant::now();
                node.run(&mut camera, &EncodingOutputs, &stop)
                    .expect("the camera ends");
                start.elapsed()
            })
        },
    );
    group.finish();
}

criterion_group!(benches, latency, throughput);
criterion_main!(benches);
