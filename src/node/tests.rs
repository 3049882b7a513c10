use std::cell::RefCell;
use std::time::Instant;

use super::*;
use crate::image::GrayImage;
use crate::msgs::{Image, Time};
use crate::types::{DescriptorKind, Descriptors, Features, Keypoints};

/// One keypoint per 8 pixel columns, so tests can tell frames of different sizes apart.
struct ColumnExtractor;

impl Extractor for ColumnExtractor {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        let n = image.width() / 8;
        let mut keypoints = Keypoints::with_capacity(n);
        for i in 0..n {
            keypoints.push((i * 8) as f32, 0.0, 31.0, 0.0, 1.0, 0);
        }
        Ok(Features {
            width: image.width(),
            height: image.height(),
            keypoints,
            descriptors: Descriptors {
                kind: DescriptorKind::Orb256,
                data: vec![0; n * 32],
            },
        })
    }
    fn backend_name(&self) -> &'static str {
        "test"
    }
    fn device_name(&self) -> String {
        "test device".into()
    }
}

/// Matches keypoint i to keypoint i.
struct DiagonalMatcher;

impl Matcher for DiagonalMatcher {
    fn match_features(&mut self, query: &Features, train: &Features) -> Result<Vec<Match>> {
        let n = query.len().min(train.len()) as u32;
        Ok((0..n)
            .map(|i| Match {
                query: i,
                train: i,
                distance: 0.0,
            })
            .collect())
    }
}

#[derive(Default)]
struct Recorder {
    features: RefCell<Vec<msgs::Features>>,
    matches: RefCell<Vec<msgs::Matches>>,
    debug_images: RefCell<Vec<Image>>,
    images: RefCell<Vec<Image>>,
    debug_subscribed: bool,
}

impl Outputs for Recorder {
    fn publish_features(&self, message: msgs::Features) -> Result<()> {
        self.features.borrow_mut().push(message);
        Ok(())
    }
    fn publish_matches(&self, message: msgs::Matches) -> Result<()> {
        self.matches.borrow_mut().push(message);
        Ok(())
    }
    fn publish_diagnostics(&self, _message: DiagnosticArray) -> Result<()> {
        Ok(())
    }
    fn publish_debug_image(&self, message: Image) -> Result<()> {
        self.debug_images.borrow_mut().push(message);
        Ok(())
    }
    fn wants_debug_image(&self) -> bool {
        self.debug_subscribed
    }
    fn publish_image(&self, message: Image) -> Result<()> {
        self.images.borrow_mut().push(message);
        Ok(())
    }
    fn features_subscribed(&self) -> bool {
        true
    }
}

fn node(mode: MatchMode) -> Node {
    let mut config = Config::default();
    config.matching.mode = mode;
    config.max_image_pixels = 64 * 64;
    Node::with_backends(
        "test_node",
        config,
        Box::new(ColumnExtractor),
        Box::new(DiagonalMatcher),
    )
}

fn frame(camera: Camera, sec: i32, nanosec: u32, width: u32) -> Frame {
    Frame {
        camera,
        image: Image {
            header: Header {
                stamp: Time { sec, nanosec },
                frame_id: format!("{camera:?}"),
            },
            height: 4,
            width,
            encoding: "mono8".into(),
            is_bigendian: 0,
            step: width,
            data: vec![7; width as usize * 4],
        },
        received: Instant::now(),
    }
}

fn stamps(headers: impl Iterator<Item = Header>) -> Vec<(i32, u32)> {
    headers.map(|h| (h.stamp.sec, h.stamp.nanosec)).collect()
}

#[test]
fn temporal_mode_matches_each_frame_against_the_previous_one() {
    let mut node = node(MatchMode::Temporal);
    let out = Recorder::default();
    for (i, width) in [16, 24, 32].into_iter().enumerate() {
        node.handle(frame(Camera::Mono, 10 + i as i32, 5, width), &out);
    }
    let features = out.features.borrow();
    assert_eq!(
        stamps(features.iter().map(|f| f.header.clone())),
        [(10, 5), (11, 5), (12, 5)]
    );
    assert_eq!(features[2].header.frame_id, "Mono");
    assert_eq!(features[2].x.len(), 4);
    assert_eq!((features[2].image_width, features[2].image_height), (32, 4));
    let matches = out.matches.borrow();
    assert_eq!(
        stamps(matches.iter().map(|m| m.header.clone())),
        [(11, 5), (12, 5)]
    );
    assert_eq!(
        stamps(matches.iter().map(|m| m.train_header.clone())),
        [(10, 5), (11, 5)]
    );
    assert!(matches.iter().all(|m| m.mode == "temporal"));
    assert_eq!(matches[1].query_idx, [0, 1, 2]);
}

#[test]
fn bad_frames_are_counted_skipped_and_the_node_goes_on() {
    let mut node = node(MatchMode::Temporal);
    let out = Recorder::default();
    node.handle(frame(Camera::Mono, 1, 0, 16), &out);
    let mut bad = Vec::new();
    let mut unknown_encoding = frame(Camera::Mono, 2, 0, 16);
    unknown_encoding.image.encoding = "yuv422".into();
    bad.push(unknown_encoding);
    let mut short_step = frame(Camera::Mono, 3, 0, 16);
    short_step.image.step = 15;
    bad.push(short_step);
    let mut short_data = frame(Camera::Mono, 4, 0, 16);
    short_data.image.data.truncate(40);
    bad.push(short_data);
    let mut zero = frame(Camera::Mono, 5, 0, 16);
    zero.image.height = 0;
    bad.push(zero);
    bad.push(frame(Camera::Mono, 6, 0, 2048)); // 2048 x 4 > max_image_pixels
    for frame in bad {
        node.handle(frame, &out);
    }
    assert_eq!(node.rejected_frames(), 5);
    assert_eq!(out.features.borrow().len(), 1);
    node.handle(frame(Camera::Mono, 7, 0, 16), &out);
    assert_eq!(
        stamps(out.features.borrow().iter().map(|f| f.header.clone())),
        [(1, 0), (7, 0)]
    );
    let matches = out.matches.borrow();
    assert_eq!(matches.len(), 1);
    assert_eq!(matches[0].train_header.stamp.sec, 1);

    let report = node.diagnostics(3);
    let value = |key: &str| {
        let values = &report.status[0].values;
        values
            .iter()
            .find(|kv| kv.key == key)
            .map(|kv| kv.value.clone())
            .unwrap()
    };
    assert_eq!(value("frames_rejected"), "5");
    assert_eq!(value("frames_processed"), "2");
    assert_eq!(value("frames_dropped"), "3");
    assert_eq!(value("backend"), "test");
    assert!(value("last_rejection").contains("max_image_pixels"));
}

#[test]
fn stereo_pairs_only_within_the_sync_tolerance() {
    let mut node = node(MatchMode::Stereo);
    let out = Recorder::default();
    node.handle(frame(Camera::Left, 1, 0, 16), &out);
    node.handle(frame(Camera::Right, 1, 4_000_000, 24), &out);
    node.handle(frame(Camera::Left, 2, 0, 16), &out);
    node.handle(frame(Camera::Right, 2, 6_000_000, 24), &out); // 6 ms > 5 ms
    assert_eq!(out.features.borrow().len(), 4);
    let matches = out.matches.borrow();
    assert_eq!(matches.len(), 1);
    assert_eq!(matches[0].mode, "stereo");
    assert_eq!(matches[0].header.frame_id, "Left");
    assert_eq!(matches[0].train_header.frame_id, "Right");
    assert_eq!(matches[0].train_header.stamp.nanosec, 4_000_000);
}

#[test]
fn the_latest_frame_wins_and_replaced_frames_are_counted() {
    let queue = InputQueue::new();
    for sec in 1..=3 {
        queue.put(frame(Camera::Mono, sec, 0, 8));
    }
    queue.put(frame(Camera::Right, 9, 0, 8));
    assert_eq!(queue.dropped(), 2);
    let Taken::Frame(first) = queue.take(Duration::ZERO) else {
        panic!("a frame is waiting")
    };
    assert_eq!(
        first.image.header.stamp.sec, 3,
        "oldest arrival first, latest per camera"
    );
    let Taken::Frame(second) = queue.take(Duration::ZERO) else {
        panic!("a frame is waiting")
    };
    assert_eq!(second.camera, Camera::Right);
    assert!(matches!(
        queue.take(Duration::from_millis(5)),
        Taken::TimedOut
    ));
    queue.close();
    assert!(matches!(queue.take(Duration::from_secs(5)), Taken::Closed));
}

#[test]
fn a_camera_that_cannot_be_opened_is_a_start_up_error() {
    let mut config = Config::default();
    assert!(
        open_camera(&config).unwrap().is_none(),
        "topic input opens nothing"
    );
    config.input.source = InputSource::Camera;
    config.input.device = "/nonexistent/clip.avi".into();
    let err = open_camera(&config)
        .err()
        .expect("a missing file is refused")
        .to_string();
    let named = if cfg!(feature = "camera") {
        "/nonexistent/clip.avi"
    } else {
        "input.source"
    };
    assert!(err.contains(named), "{err}");
}

#[test]
fn debug_images_are_drawn_only_while_someone_subscribes() {
    let mut quiet = node(MatchMode::Temporal);
    let unsubscribed = Recorder::default();
    quiet.handle(frame(Camera::Mono, 1, 0, 16), &unsubscribed);
    quiet.handle(frame(Camera::Mono, 2, 0, 16), &unsubscribed);
    assert!(unsubscribed.debug_images.borrow().is_empty());

    let mut node = node(MatchMode::Temporal);
    let subscribed = Recorder {
        debug_subscribed: true,
        ..Recorder::default()
    };
    node.handle(frame(Camera::Mono, 1, 0, 16), &subscribed);
    node.handle(frame(Camera::Mono, 2, 0, 24), &subscribed);
    let images = subscribed.debug_images.borrow();
    assert_eq!(images.len(), 2);
    // The first frame alone: its keypoints; then both frames side by side.
    assert_eq!((images[0].width, images[0].height), (16, 4));
    assert_eq!((images[1].width, images[1].height), (24 + 16, 4));
    assert_eq!(images[1].header.stamp.sec, 2);
    assert_eq!(images[1].encoding, "rgb8");
    assert_eq!(
        images[1].data.len(),
        (images[1].step * images[1].height) as usize
    );
}

#[test]
fn diagnostics_report_keypoints_and_matches_per_frame_and_unreadable_frames() {
    let mut node = node(MatchMode::Temporal);
    let out = Recorder::default();
    node.handle(frame(Camera::Mono, 1, 0, 16), &out); // 2 keypoints
    node.handle(frame(Camera::Mono, 2, 0, 32), &out); // 4 keypoints, 2 matches
    node.unreadable("camera 0 gave no frame".into());
    let report = node.diagnostics(0);
    assert_eq!(report.value("keypoints_per_frame"), Some("3"));
    assert_eq!(report.value("matches_per_frame"), Some("2"));
    assert_eq!(report.value("frames_processed"), Some("2"));
    assert_eq!(report.value("frames_rejected"), Some("1"));
    assert_eq!(
        report.value("last_rejection"),
        Some("camera 0 gave no frame")
    );
}
