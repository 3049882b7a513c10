use std::cell::RefCell;

use super::*;
use crate::error::CameraError;
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
    diagnostics: RefCell<Vec<DiagnosticArray>>,
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
    fn publish_diagnostics(&self, message: DiagnosticArray) -> Result<()> {
        self.diagnostics.borrow_mut().push(message);
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
    node_with(mode, Box::new(ColumnExtractor))
}

fn node_with(mode: MatchMode, extractor: Box<dyn Extractor>) -> Node {
    let mut config = NodeConfig::default();
    config.matching.mode = mode;
    config.library.max_image_pixels = 64 * 64;
    Node::with_backends("test_node", config, extractor, Box::new(DiagonalMatcher))
}

fn image(camera: Camera, sec: i32, nanosec: u32, width: u32) -> Image {
    Image {
        header: Header {
            stamp: Time { sec, nanosec },
            frame_id: format!("{camera:?}"),
        },
        height: 4,
        width,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: width,
        data: vec![7; width as usize * 4].into(),
    }
}

fn frame(camera: Camera, sec: i32, nanosec: u32, width: u32) -> Frame {
    Frame::from_image(camera, image(camera, sec, nanosec, width))
}

/// A frame whose image message `change` spoils.
fn spoiled(sec: i32, change: impl FnOnce(&mut Image)) -> Frame {
    let mut image = image(Camera::Mono, sec, 0, 16);
    change(&mut image);
    Frame::from_image(Camera::Mono, image)
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
    let bad = [
        spoiled(2, |image| image.encoding = "bayer_rggb16".into()),
        spoiled(3, |image| image.step = 15),
        spoiled(4, |image| image.data = image.data[..40].to_vec().into()),
        spoiled(5, |image| image.height = 0),
        frame(Camera::Mono, 6, 0, 2048), // 2048 x 4 > max_image_pixels
    ];
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

    let report = node.diagnostics(3, None);
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
    let Next::Frame(first) = queue.take(Instant::now()) else {
        panic!("a frame is waiting")
    };
    assert_eq!(
        first.header.stamp.sec, 3,
        "oldest arrival first, latest per camera"
    );
    let Next::Frame(second) = queue.take(Instant::now()) else {
        panic!("a frame is waiting")
    };
    assert_eq!(second.camera, Camera::Right);
    assert!(matches!(
        queue.take(Instant::now() + Duration::from_millis(5)),
        Next::Idle
    ));
    queue.unreadable("truncated CDR".into());
    queue.unreadable("bad CDR".into());
    let Next::Unreadable { count, reason } = queue.take(Instant::now()) else {
        panic!("undecodable messages are reported")
    };
    assert_eq!((count, reason.as_str()), (2, "bad CDR"));
    queue.close();
    let forever = Instant::now() + Duration::from_secs(5);
    assert!(matches!(queue.take(forever), Next::End));
}

#[test]
fn a_camera_that_cannot_be_opened_is_a_start_up_error() {
    let mut config = NodeConfig::default();
    config.input.source = crate::config::InputSource::Camera;
    config.input.device = "/nonexistent/clip.avi".into();
    let err = CameraSource::open(&config.input, config.library.max_image_pixels)
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
    node.unreadable(1, "camera 0 gave no frame".into());
    let report = node.diagnostics(0, None);
    assert_eq!(report.value("keypoints_per_frame"), Some("3"));
    assert_eq!(report.value("matches_per_frame"), Some("2"));
    assert_eq!(report.value("frames_processed"), Some("2"));
    assert_eq!(report.value("frames_rejected"), Some("1"));
    assert_eq!(
        report.value("last_rejection"),
        Some("camera 0 gave no frame")
    );
}

/// A source that plays a script, then ends.
struct Scripted {
    script: std::collections::VecDeque<Result<Next>>,
    dropped: u64,
}

impl FrameSource for Scripted {
    fn next(&mut self, _deadline: Instant) -> Result<Next> {
        self.script.pop_front().unwrap_or(Ok(Next::End))
    }
    fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[test]
fn run_takes_every_kind_of_event_from_the_source_and_reports_the_totals_at_the_end() {
    let mut node = node(MatchMode::Temporal);
    let out = Recorder::default();
    let mut source = Scripted {
        script: [
            Ok(Next::Frame(Box::new(frame(Camera::Mono, 1, 0, 16)))),
            Ok(Next::Idle),
            Ok(Next::Unreadable {
                count: 3,
                reason: "cannot decode a Image: unexpected end of CDR".into(),
            }),
            Ok(Next::Frame(Box::new(frame(Camera::Mono, 2, 0, 16)))),
        ]
        .into(),
        dropped: 4,
    };
    node.run(&mut source, &out, &AtomicBool::new(false))
        .expect("the source ended");
    assert_eq!(out.features.borrow().len(), 2);
    assert_eq!(out.matches.borrow().len(), 1);
    let diagnostics = out.diagnostics.borrow();
    let totals = diagnostics
        .last()
        .expect("the totals are published at the end");
    assert_eq!(totals.value("frames_processed"), Some("2"));
    assert_eq!(totals.value("frames_rejected"), Some("3"));
    assert_eq!(totals.value("frames_dropped"), Some("4"));
    assert!(totals
        .value("last_rejection")
        .unwrap()
        .contains("unexpected end of CDR"));
}

#[test]
fn run_ends_with_the_error_of_a_failed_source_and_stops_when_asked() {
    let mut node = node(MatchMode::None);
    let out = Recorder::default();
    let mut failing = Scripted {
        script: [
            Ok(Next::Frame(Box::new(frame(Camera::Mono, 1, 0, 16)))),
            Err(crate::Error::Camera(CameraError::Failed {
                device: "camera 0".into(),
                reason: "no frame for 5 s: giving up".into(),
            })),
        ]
        .into(),
        dropped: 0,
    };
    let err = node
        .run(&mut failing, &out, &AtomicBool::new(false))
        .unwrap_err();
    assert!(err.to_string().contains("giving up"), "{err}");
    assert_eq!(out.features.borrow().len(), 1);

    let mut endless = Scripted {
        script: std::iter::repeat_with(|| Ok(Next::Idle))
            .take(1000)
            .collect(),
        dropped: 0,
    };
    node.run(&mut endless, &out, &AtomicBool::new(true))
        .expect("a stop request ends the run cleanly");
    assert_eq!(endless.script.len(), 1000, "nothing read after the stop");
}

/// Returns each frame's features with the next submission, as an extractor that
/// overlaps frames does; fails (losing the frame it holds) on frames `fail_width` wide.
#[derive(Default)]
struct Overlapping {
    held: Option<Features>,
    fail_width: Option<usize>,
}

impl Extractor for Overlapping {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        ColumnExtractor.extract(image)
    }
    fn submit(&mut self, image: &GrayImage) -> Result<Option<Features>> {
        if Some(image.width()) == self.fail_width {
            self.held = None;
            return Err(crate::Error::Cuda(crate::error::CudaError::Unavailable(
                "the device went away".into(),
            )));
        }
        let features = self.extract(image)?;
        Ok(self.held.replace(features))
    }
    fn submit_frame(&mut self, frame: &crate::image::RawFrame<'_>) -> Result<Option<Features>> {
        self.submit(&GrayImage::from_raw(frame)?)
    }
    fn finish_frame(&mut self) -> Result<Option<Features>> {
        Ok(self.held.take())
    }
    fn backend_name(&self) -> &'static str {
        "test"
    }
    fn device_name(&self) -> String {
        "overlapping test device".into()
    }
}

#[test]
fn frames_in_flight_are_published_in_order_with_their_own_headers() {
    let mut node = node_with(MatchMode::Temporal, Box::new(Overlapping::default()));
    let out = Recorder::default();
    node.handle(frame(Camera::Mono, 1, 0, 16), &out);
    assert!(out.features.borrow().is_empty(), "frame 1 is in flight");
    node.handle(frame(Camera::Mono, 2, 0, 24), &out);
    node.finish_in_flight(&out);
    let features = out.features.borrow();
    assert_eq!(
        stamps(features.iter().map(|f| f.header.clone())),
        [(1, 0), (2, 0)]
    );
    assert_eq!(
        features[1].x.len(),
        3,
        "frame 2's own features (24 px wide)"
    );
    let matches = out.matches.borrow();
    assert_eq!(stamps(matches.iter().map(|m| m.header.clone())), [(2, 0)]);
    assert_eq!(
        stamps(matches.iter().map(|m| m.train_header.clone())),
        [(1, 0)]
    );
}

#[test]
fn run_overlaps_only_frames_that_are_already_there_and_publishes_the_rest_at_once() {
    let mut node = node_with(MatchMode::Temporal, Box::new(Overlapping::default()));
    let out = Recorder::default();
    let frames = |secs: std::ops::Range<i32>| {
        secs.map(|sec| Ok(Next::Frame(Box::new(frame(Camera::Mono, sec, 0, 16)))))
    };
    let mut source = Scripted {
        script: frames(1..4)
            .chain([Ok(Next::Idle)])
            .chain(frames(4..6))
            .collect(),
        dropped: 0,
    };
    node.run(&mut source, &out, &AtomicBool::new(false))
        .expect("the source ended");
    let features = out.features.borrow();
    assert_eq!(
        stamps(features.iter().map(|f| f.header.clone())),
        [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]
    );
    assert_eq!(out.matches.borrow().len(), 4);
    let totals = out.diagnostics.borrow();
    assert_eq!(totals.last().unwrap().value("frames_processed"), Some("5"));
}

#[test]
fn a_failed_submission_counts_every_frame_in_flight_as_failed() {
    let extractor = Overlapping {
        fail_width: Some(24),
        ..Overlapping::default()
    };
    let mut node = node_with(MatchMode::None, Box::new(extractor));
    let out = Recorder::default();
    for (sec, width) in [(1, 16), (2, 24), (3, 16)] {
        node.handle(frame(Camera::Mono, sec, 0, width), &out);
    }
    node.finish_in_flight(&out);
    assert_eq!(
        stamps(out.features.borrow().iter().map(|f| f.header.clone())),
        [(3, 0)],
        "frames 1 and 2 were lost with the failed submission"
    );
    let report = node.diagnostics(0, None);
    assert_eq!(report.value("frames_failed"), Some("2"));
    assert_eq!(report.value("frames_processed"), Some("1"));
}

fn test_file(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn compressed(sec: i32, format: &str, data: Vec<u8>) -> Frame {
    let header = Header {
        stamp: Time { sec, nanosec: 0 },
        frame_id: "camera".into(),
    };
    Frame::from_compressed(
        Camera::Mono,
        msgs::CompressedImage {
            header,
            format: format.into(),
            data,
        },
    )
}

#[test]
fn compressed_frames_are_decoded_as_files_are_and_bad_ones_rejected_with_the_reason() {
    let mut config = NodeConfig::default();
    config.matching.mode = MatchMode::None;
    let mut node = Node::with_backends(
        "test_node",
        config,
        Box::new(ColumnExtractor),
        Box::new(DiagonalMatcher),
    );
    let out = Recorder::default();
    let jpeg = test_file("leuvenA.jpg");
    let png = test_file("basketball1.png");
    node.handle(
        compressed(1, "bgr8; jpeg compressed bgr8", jpeg.clone()),
        &out,
    );
    node.handle(compressed(2, "png", png), &out);
    let features = out.features.borrow().clone();
    let library = GrayImage::decode(&jpeg, u64::MAX).unwrap();
    assert_eq!(
        (
            features[0].image_width as usize,
            features[0].image_height as usize
        ),
        (library.width(), library.height())
    );
    assert_eq!(
        (features[1].image_width, features[1].image_height),
        (640, 480)
    );

    let cases = [
        (
            compressed(3, "jpeg", jpeg[..jpeg.len() / 2].to_vec()),
            "truncated",
        ),
        (
            compressed(4, "jpeg", b"not an image at all".to_vec()),
            "PNG, JPEG",
        ),
        (
            compressed(5, "rvl", jpeg.clone()),
            "unsupported compressed format",
        ),
    ];
    for (frame, reason) in cases {
        node.handle(frame, &out);
        let report = node.diagnostics(0, None);
        let last = report.value("last_rejection").unwrap().to_string();
        assert!(last.contains(reason), "{reason}: {last}");
    }
    assert_eq!(node.rejected_frames(), 3);
    assert_eq!(out.features.borrow().len(), 2);
}

/// Matches keypoint i to keypoint i at a distance that names both frames by their
/// widths (`1000 x query width + train width`), so a test can tell which frames were
/// matched.
fn width_matches(query: &Features, train: &Features) -> Vec<Match> {
    let distance = (1000 * query.width + train.width) as f32;
    (0..query.len().min(train.len()) as u32)
        .map(|i| Match {
            query: i,
            train: i,
            distance,
        })
        .collect()
}

struct WidthMatcher;

impl Matcher for WidthMatcher {
    fn match_features(&mut self, query: &Features, train: &Features) -> Result<Vec<Match>> {
        Ok(width_matches(query, train))
    }
}

/// A matcher the node must not need.
struct NoMatcher;

impl Matcher for NoMatcher {
    fn match_features(&mut self, _: &Features, _: &Features) -> Result<Vec<Match>> {
        Err(crate::Error::Image(crate::error::ImageError::Invalid(
            "the extractor matches".into(),
        )))
    }
}

/// Matches resident features as the GPU does, on the host: two slots of features,
/// matched with `width_matches`. A frame `fail_width` wide fails after it was kept,
/// as a GPU frame whose kernels ran and whose features were lost.
#[derive(Default)]
struct HostResident {
    slots: Option<[Option<Features>; 2]>,
    residency: Option<Residency>,
    matches: Option<Vec<Match>>,
    fail_width: Option<usize>,
}

impl Extractor for HostResident {
    fn extract(&mut self, image: &GrayImage) -> Result<Features> {
        let features = ColumnExtractor.extract(image)?;
        let residency = self.residency.unwrap_or(Residency::PREVIOUS);
        if let Some(slots) = &mut self.slots {
            self.matches = slots[residency.match_with.index()]
                .as_ref()
                .map(|kept| match residency.frame_is_query {
                    true => width_matches(&features, kept),
                    false => width_matches(kept, &features),
                });
            slots[residency.keep_as.index()] = Some(features.clone());
        }
        if Some(image.width()) == self.fail_width {
            return Err(crate::Error::Cuda(crate::error::CudaError::Unavailable(
                "the device went away".into(),
            )));
        }
        Ok(features)
    }
    fn match_resident(&mut self, config: Option<&crate::MatchConfig>) -> Result<bool> {
        self.slots = config.map(|_| [None, None]);
        self.matches = None;
        Ok(config.is_some())
    }
    fn set_residency(&mut self, residency: Residency) {
        self.residency = Some(residency);
    }
    fn resident_matches(&mut self) -> Option<Vec<Match>> {
        self.matches.take()
    }
    fn backend_name(&self) -> &'static str {
        "test"
    }
    fn device_name(&self) -> String {
        "resident test device".into()
    }
}

fn stereo_node(extractor: Box<dyn Extractor>, matcher: Box<dyn Matcher>) -> Node {
    let mut config = NodeConfig::default();
    config.matching.mode = MatchMode::Stereo;
    config.library.max_image_pixels = 64 * 64;
    Node::with_backends("test_node", config, extractor, matcher)
}

/// A stamp as (sec, nanosec).
type Stamp = (i32, u32);

/// (query stamp, train stamp, distances) of each published Matches.
fn matched(out: &Recorder) -> Vec<(Stamp, Stamp, Vec<f32>)> {
    out.matches
        .borrow()
        .iter()
        .map(|m| {
            let stamp = |h: &Header| (h.stamp.sec, h.stamp.nanosec);
            (stamp(&m.header), stamp(&m.train_header), m.distance.clone())
        })
        .collect()
}

#[test]
fn stereo_matches_made_in_the_extractor_are_the_matchers_whichever_camera_comes_first() {
    // (camera, sec, ms, width): the left frame first, then the right first, a frame
    // outside the tolerance that a later one replaces, a right frame after its left
    // was paired, and two lefts in a row.
    let script = [
        (Camera::Left, 1, 0, 16),
        (Camera::Right, 1, 2, 24),
        (Camera::Right, 2, 0, 32),
        (Camera::Left, 2, 3, 40),
        (Camera::Left, 3, 0, 48),
        (Camera::Right, 3, 9, 56),
        (Camera::Left, 3, 8, 64),
        (Camera::Right, 4, 0, 72),
        (Camera::Left, 5, 0, 80),
        (Camera::Left, 6, 0, 88),
        (Camera::Right, 6, 1, 96),
    ];
    let feed = |node: &mut Node| {
        let out = Recorder::default();
        for (camera, sec, ms, width) in script {
            node.handle(frame(camera, sec, ms * 1_000_000, width), &out);
        }
        matched(&out)
    };
    let expected = feed(&mut stereo_node(
        Box::new(ColumnExtractor),
        Box::new(WidthMatcher),
    ));
    let got = feed(&mut stereo_node(
        Box::new(HostResident::default()),
        Box::new(NoMatcher),
    ));
    assert_eq!(got, expected);
    let pairs: Vec<_> = expected
        .iter()
        .map(|(left, right, distances)| (*left, *right, distances[0]))
        .collect();
    assert_eq!(
        pairs,
        [
            ((1, 0), (1, 2_000_000), 16_024.0),
            ((2, 3_000_000), (2, 0), 40_032.0),
            ((3, 8_000_000), (3, 9_000_000), 64_056.0),
            ((6, 0), (6, 1_000_000), 88_096.0),
        ]
    );
}

#[test]
fn a_lost_frame_restarts_the_extractors_matching_and_its_pair_is_matched_by_the_matcher() {
    let extractor = HostResident {
        fail_width: Some(24),
        ..HostResident::default()
    };
    let mut node = stereo_node(Box::new(extractor), Box::new(WidthMatcher));
    let out = Recorder::default();
    node.handle(frame(Camera::Left, 1, 0, 16), &out);
    // Kept as the latest left frame by the extractor, then lost.
    node.handle(frame(Camera::Left, 1, 1_000_000, 24), &out);
    node.handle(frame(Camera::Right, 1, 2_000_000, 32), &out);
    node.handle(frame(Camera::Left, 2, 0, 40), &out);
    node.handle(frame(Camera::Right, 2, 0, 48), &out);
    let pairs: Vec<_> = matched(&out)
        .into_iter()
        .map(|(left, right, distances)| (left, right, distances[0]))
        .collect();
    assert_eq!(
        pairs,
        [
            // The frame lost is not what the left frame of the pair is matched with.
            ((1, 0), (1, 2_000_000), 16_032.0),
            ((2, 0), (2, 0), 40_048.0),
        ]
    );
    assert_eq!(node.diagnostics(0, None).value("frames_failed"), Some("1"));
}
