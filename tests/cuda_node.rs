//! The node on the CUDA backend against the node on the CPU backend: frames in every
//! camera encoding converted on the GPU bit for bit, the same Features and Matches on
//! real sequences with temporal and stereo matching on the GPU (ORB; SIFT's matches
//! against the matchers on its published features) in both memory modes, and no GPU
//! allocation per frame once running. GPU tests, run by scripts/gpu-check.sh.
#![cfg(feature = "cuda")]

mod common;

use orbsift::config::{MatchMode, MemoryMode, NodeConfig, NodeMatchConfig};
use orbsift::cpu::matcher::BruteForceMatcher;
use orbsift::cpu::orb::OrbExtractor;
use orbsift::cuda::CudaOrbExtractor;
use orbsift::cuda::{CudaL2Matcher, CudaMatcher};
use orbsift::image::{Encoding, RawFrame};
use orbsift::msgs::{Header, Image, Time};
use orbsift::node::{Camera, Frame, Node};
use orbsift::{
    Algorithm, Backend, Config, DescriptorKind, Descriptors, Extractor, Features, GrayImage,
    Keypoints, Match, MatchConfig, Matcher, OrbConfig,
};

use common::encoded::frames_from;
use common::frames::{load, resized};
use common::recorder::Recorder;

/// `message` as a transport hands it to the node: decoded from CDR, into the memory
/// the node's extractor offers (orbsift::frame_memory).
fn received(message: &Image) -> Image {
    orbsift::msgs::decode(&orbsift::msgs::encode(message).expect("CDR")).expect("an Image")
}

fn image_message(sec: i32, raw: &RawFrame<'_>) -> Image {
    Image {
        header: Header {
            stamp: Time { sec, nanosec: 0 },
            frame_id: "camera".into(),
        },
        height: raw.height as u32,
        width: raw.width as u32,
        encoding: raw.encoding.name().into(),
        is_bigendian: 0,
        step: raw.step as u32,
        data: raw.data.to_vec().into(),
    }
}

#[test]
#[ignore = "needs a GPU: runs in scripts/gpu-check.sh"]
fn every_camera_encoding_is_converted_on_the_gpu_bit_for_bit() {
    for memory in [MemoryMode::Device, MemoryMode::Unified] {
        let mut gpu = CudaOrbExtractor::new(OrbConfig::default(), memory, None).expect("GPU");
        let mut cpu = OrbExtractor::new(OrbConfig::default()).expect("config");
        for photo in ["graf1.png", "rubberwhale1.png"] {
            for frame in frames_from(photo) {
                let what = format!("{photo} {} ({memory:?})", frame.name);
                let raw = frame.raw();
                let features = gpu
                    .extract_frame(&raw)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let converted = &gpu.stage_images().expect("stages")[0].image;
                let reference = GrayImage::from_raw(&raw).expect("CPU conversion");
                assert!(
                    converted == reference.data(),
                    "{what}: the GPU's grey differs"
                );
                let expected = cpu.extract(&reference).expect("CPU extraction");
                assert_eq!(features.keypoints, expected.keypoints, "{what}");
                assert_eq!(features.descriptors, expected.descriptors, "{what}");
            }
        }
    }
}

/// Real consecutive frames: two Middlebury sequences and the graffiti pair, at 1080p.
fn sequence() -> Vec<GrayImage> {
    [
        "basketball1.png",
        "basketball2.png",
        "rubberwhale1.png",
        "rubberwhale2.png",
        "graf1.png",
        "graf3.png",
    ]
    .iter()
    .map(|name| resized(&load(name), (1920, 1080)))
    .collect()
}

fn node_on(backend: Backend, memory: MemoryMode, mode: MatchMode) -> Node {
    node_running(Algorithm::Orb, backend, memory, mode)
}

fn node_config(
    algorithm: Algorithm,
    backend: Backend,
    memory: MemoryMode,
    mode: MatchMode,
) -> NodeConfig {
    let mut library = Config {
        backend,
        algorithm,
        memory,
        ..Config::default()
    };
    library.sift.upscale = false;
    NodeConfig {
        library,
        matching: NodeMatchConfig {
            mode,
            ..NodeMatchConfig::default()
        },
        ..NodeConfig::default()
    }
}

fn node_running(
    algorithm: Algorithm,
    backend: Backend,
    memory: MemoryMode,
    mode: MatchMode,
) -> Node {
    let config = node_config(algorithm, backend, memory, mode);
    let mut node = Node::new("test", config).expect("node");
    let report = node.diagnostics(0, None);
    let expected = if backend == Backend::Cuda {
        "cuda"
    } else {
        "cpu"
    };
    assert_eq!(
        report.value("backend"),
        Some(expected),
        "the node runs the backend asked for"
    );
    node
}

/// `gray` as the `i`th message of a feed, stamped `stamp`: bgr8 for even `i`, mono8
/// for odd.
fn feed_message(i: usize, gray: &GrayImage, stamp: Time) -> Image {
    let mut message = if i % 2 == 0 {
        let bgr: Vec<u8> = gray.data().iter().flat_map(|&v| [v, v, v]).collect();
        let raw = RawFrame {
            encoding: Encoding::Bgr8,
            width: gray.width(),
            height: gray.height(),
            step: gray.width() * 3,
            big_endian: false,
            data: &bgr,
            page_locked: None,
        };
        image_message(0, &raw)
    } else {
        image_message(0, &gray.as_raw())
    };
    message.header.stamp = stamp;
    message
}

/// Feeds `frames` to `node` as mono8 (odd) and bgr8 (even) messages, one second apart.
fn run(node: &mut Node, frames: &[GrayImage]) -> Recorder {
    let outputs = Recorder::default();
    for (i, gray) in frames.iter().enumerate() {
        let stamp = Time {
            sec: i as i32,
            nanosec: 0,
        };
        let message = received(&feed_message(i, gray, stamp));
        node.handle(Frame::from_image(Camera::Mono, message), &outputs);
    }
    // Back to back, each frame overlapped the one before it: the last is still in flight.
    node.finish_in_flight(&outputs);
    outputs
}

#[test]
#[ignore = "needs a GPU: runs in scripts/gpu-check.sh"]
fn the_cuda_node_publishes_the_cpu_nodes_features_and_temporal_matches() {
    let frames = sequence();
    assert_cuda_nodes_publish_the_cpu_nodes(
        MatchMode::Temporal,
        (frames.len(), frames.len() - 1),
        |memory| node_on(Backend::Cuda, memory, MatchMode::Temporal),
        |node| run(node, &frames),
    );
}

/// Feeds the CPU node of `mode` with `feed`, checks that it published `counts` Features
/// and Matches messages, every Matches non-empty, then that the CUDA node `cuda_node`
/// makes, fed the same, publishes the same in both memory modes. Returns what the CPU
/// node published.
fn assert_cuda_nodes_publish_the_cpu_nodes(
    mode: MatchMode,
    (features, matches): (usize, usize),
    cuda_node: impl Fn(MemoryMode) -> Node,
    feed: impl Fn(&mut Node) -> Recorder,
) -> Recorder {
    let expected = feed(&mut node_on(Backend::Cpu, MemoryMode::Auto, mode));
    assert_eq!(expected.features.borrow().len(), features);
    assert_eq!(expected.matches.borrow().len(), matches);
    assert!(
        expected
            .matches
            .borrow()
            .iter()
            .all(|m| !m.query_idx.is_empty()),
        "every {mode:?} Matches has matches"
    );
    for memory in [MemoryMode::Device, MemoryMode::Unified] {
        let got = feed(&mut cuda_node(memory));
        assert!(
            *got.features.borrow() == *expected.features.borrow(),
            "{memory:?}: Features differ from the CPU node's"
        );
        assert!(
            *got.matches.borrow() == *expected.matches.borrow(),
            "{memory:?}: {mode:?} Matches differ from the CPU node's"
        );
    }
    expected
}

#[test]
#[ignore = "needs a GPU: runs in scripts/gpu-check.sh"]
fn a_running_node_allocates_no_gpu_memory_per_frame() {
    let frames = sequence();
    let cases = [Algorithm::Orb, Algorithm::Sift]
        .into_iter()
        .flat_map(|algorithm| {
            [
                (algorithm, MatchMode::Temporal),
                (algorithm, MatchMode::Stereo),
            ]
        });
    for (algorithm, mode) in cases {
        let mut node = node_running(algorithm, Backend::Cuda, MemoryMode::Device, mode);
        let outputs = Recorder::default();
        let mut feed = |count: usize, outputs: &Recorder| {
            for i in 0..count {
                let gray = &frames[i % frames.len()];
                // Stereo: left and right of one stamp, the left first in even pairs
                // and the right first in odd ones; temporal: one camera.
                let camera = match (mode, (i + i / 2) % 2) {
                    (MatchMode::Stereo, 0) => Camera::Left,
                    (MatchMode::Stereo, _) => Camera::Right,
                    _ => Camera::Mono,
                };
                let message = received(&image_message((i / 2) as i32, &gray.as_raw()));
                assert!(
                    message.data.page_locked().is_some(),
                    "{algorithm:?} {mode:?}: frame {i} decoded into ordinary memory"
                );
                node.handle(Frame::from_image(camera, message), outputs);
            }
        };
        // Every frame size, encoding, set size and order once: the buffers grow to
        // their steady sizes.
        feed(2 * frames.len(), &outputs);
        let before = orbsift::cuda::allocations();
        let published = outputs.matches.borrow().len();
        feed(100, &outputs);
        assert_eq!(
            orbsift::cuda::allocations() - before,
            0,
            "{algorithm:?} {mode:?}: GPU, pinned or frame buffers allocated while running"
        );
        assert!(
            outputs.matches.borrow().len() - published >= 49,
            "{algorithm:?} {mode:?}: the frames were matched"
        );
        let report = node.diagnostics(0, None);
        let received = |key| report.value(key).and_then(|v| v.parse::<u64>().ok());
        assert!(
            received("frames_received_page_locked").is_some_and(|n| n >= 100),
            "{algorithm:?} {mode:?}: the report counts the page-locked frames"
        );
        assert_eq!(received("frames_received_copied"), Some(0));
    }
}

/// The host matcher of a node that matches on the GPU: never called.
struct NoHostMatching;

impl Matcher for NoHostMatching {
    fn match_features(&mut self, _: &Features, _: &Features) -> orbsift::Result<Vec<Match>> {
        panic!("the node matched a stereo pair on the host, not on the GPU");
    }
}

/// A CUDA node in stereo mode whose pairs must be matched in its extractor.
fn stereo_node_matching_on_the_gpu(algorithm: Algorithm, memory: MemoryMode) -> Node {
    let config = node_config(algorithm, Backend::Cuda, memory, MatchMode::Stereo);
    let extractor = orbsift::create_extractor(&config.library).expect("CUDA extractor");
    Node::with_backends("test", config, extractor, Box::new(NoHostMatching))
}

/// Stereo-ish pairs at 1080p: three scenes, each seen by a left and a right camera
/// whose window starts 24 pixels further right (the scene 24 pixels further left in
/// the right frame, as a rig with that disparity sees it), and the street of leuvenA
/// and leuvenB, photographed from two places.
fn stereo_pairs() -> Vec<(GrayImage, GrayImage)> {
    const DISPARITY: usize = 24;
    let window = |scene: &GrayImage, left: usize| {
        let width = scene.width() - DISPARITY;
        let data = (0..scene.height())
            .flat_map(|y| scene.row(y)[left..left + width].iter().copied())
            .collect();
        GrayImage::new(width, scene.height(), data).expect("window")
    };
    let mut pairs: Vec<_> = ["graf1.png", "basketball1.png", "rubberwhale1.png"]
        .iter()
        .map(|name| {
            let scene = resized(&load(name), (1920 + DISPARITY as u32, 1080));
            (window(&scene, 0), window(&scene, DISPARITY))
        })
        .collect();
    let street = |name| resized(&load(name), (1920, 1080));
    pairs.push((street("leuvenA.jpg"), street("leuvenB.jpg")));
    pairs
}

#[test]
#[ignore = "needs a GPU: runs in scripts/gpu-check.sh"]
fn the_cuda_node_publishes_the_cpu_nodes_features_and_stereo_matches() {
    let pairs = stereo_pairs();
    let expected = assert_cuda_nodes_publish_the_cpu_nodes(
        MatchMode::Stereo,
        (2 * pairs.len(), pairs.len()),
        |memory| stereo_node_matching_on_the_gpu(Algorithm::Orb, memory),
        |node| run_stereo(node, &pairs),
    );
    assert!(
        expected
            .matches
            .borrow()
            .iter()
            .all(|m| m.header.stamp.nanosec == 0),
        "the left frame is the query of every pair"
    );
}

/// Feeds stereo `pairs` to `node`, pair k at second k with its right frame 1 ms after
/// the left; the left frame arrives first in even pairs, the right one in odd pairs;
/// messages alternate bgr8 and mono8.
fn run_stereo(node: &mut Node, pairs: &[(GrayImage, GrayImage)]) -> Recorder {
    let outputs = Recorder::default();
    let mut i = 0;
    for (k, (left, right)) in pairs.iter().enumerate() {
        let sec = k as i32;
        let mut frames = [(Camera::Left, left, 0), (Camera::Right, right, 1_000_000)];
        if k % 2 == 1 {
            frames.reverse();
        }
        for (camera, gray, nanosec) in frames {
            let message = feed_message(i, gray, Time { sec, nanosec });
            node.handle(Frame::from_image(camera, message), &outputs);
            i += 1;
        }
    }
    node.finish_in_flight(&outputs);
    outputs
}

/// The node published `expected` (non-empty) in `got`, index for index and distance
/// for distance; `context` names the case.
fn assert_published_matches(got: &orbsift::msgs::Matches, expected: &[Match], context: &str) {
    assert!(!expected.is_empty(), "{context}: no matches to compare");
    let published: Vec<(u32, u32, f32)> = got
        .query_idx
        .iter()
        .zip(&got.train_idx)
        .zip(&got.distance)
        .map(|((&q, &t), &d)| (q, t, d))
        .collect();
    let wanted: Vec<_> = expected
        .iter()
        .map(|m| (m.query, m.train, m.distance))
        .collect();
    assert_eq!(published, wanted, "{context}: the node's matches differ");
}

/// The descriptors of a Features message, as the library's type holds them.
fn descriptors_of(message: &orbsift::msgs::Features) -> Features {
    Features {
        width: message.image_width as usize,
        height: message.image_height as usize,
        keypoints: Keypoints::default(),
        descriptors: Descriptors {
            kind: DescriptorKind::Sift128U8,
            data: message.descriptors.clone(),
        },
    }
}

#[test]
#[ignore = "needs a GPU: runs in scripts/gpu-check.sh"]
fn sift_temporal_matches_on_the_gpu_equal_the_standalone_matcher_on_the_published_features() {
    let frames = sequence();
    for memory in [MemoryMode::Device, MemoryMode::Unified] {
        let mut node = node_running(Algorithm::Sift, Backend::Cuda, memory, MatchMode::Temporal);
        let published = run(&mut node, &frames);
        let (features, matches) = (published.features.borrow(), published.matches.borrow());
        assert_eq!(matches.len(), frames.len() - 1, "{memory:?}");
        let mut standalone =
            CudaMatcher::<CudaL2Matcher>::new(MatchConfig::default(), None).expect("GPU");
        for (i, got) in matches.iter().enumerate() {
            let (query, train) = (
                descriptors_of(&features[i + 1]),
                descriptors_of(&features[i]),
            );
            let expected = standalone.match_features(&query, &train).expect("matches");
            let context = format!("{memory:?} frame {}, against the standalone matcher", i + 1);
            assert_published_matches(got, &expected, &context);
        }
    }
}

#[test]
#[ignore = "needs a GPU: runs in scripts/gpu-check.sh"]
fn sift_stereo_matches_on_the_gpu_equal_the_cpu_matcher_on_the_published_features() {
    let pairs = stereo_pairs();
    for memory in [MemoryMode::Device, MemoryMode::Unified] {
        let mut node = stereo_node_matching_on_the_gpu(Algorithm::Sift, memory);
        let published = run_stereo(&mut node, &pairs);
        let (features, matches) = (published.features.borrow(), published.matches.borrow());
        assert_eq!(matches.len(), pairs.len(), "{memory:?}");
        let of = |header: &Header| {
            let message = features.iter().find(|f| f.header == *header);
            descriptors_of(message.expect("the frame's Features were published"))
        };
        let mut cpu = BruteForceMatcher::new(MatchConfig::default());
        for (k, got) in matches.iter().enumerate() {
            assert_eq!(
                got.header.stamp.nanosec, 0,
                "{memory:?} pair {k}: left is the query"
            );
            let expected = cpu
                .match_features(&of(&got.header), &of(&got.train_header))
                .expect("matches");
            let context = format!("{memory:?} stereo pair {k}, against the CPU matcher");
            assert_published_matches(got, &expected, &context);
        }
    }
}
