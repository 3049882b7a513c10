//! The node runtime, the same over every transport and every input: frames come
//! through one [`FrameSource`] seam into [`Node::run`], which extracts, matches and
//! publishes through [`Outputs`], and reports `/diagnostics` (and a log line) once a
//! second.
//!
//! Transports only supply subscriptions (feeding an [`InputQueue`]) and [`Outputs`].
//! Bad frames are rejected here with a reason, counted, and the node goes on.

#[cfg(feature = "camera")]
mod camera;
mod checked;
#[cfg(not(feature = "camera"))]
mod no_camera;
mod parameters;
mod source;
mod stats;
mod stereo;
mod throttle;
mod topic;

#[cfg(feature = "camera")]
pub use camera::CameraSource;
#[cfg(not(feature = "camera"))]
pub use no_camera::CameraSource;
pub use parameters::LiveParameters;
pub use source::{Arrivals, Camera, Frame, FrameSource, Next, Pixels};
pub use throttle::Throttle;
pub use topic::{InputQueue, TopicSource};

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{Backend, MatchMode, NodeConfig};
use crate::draw;
use crate::error::Result;
use crate::extractor::{Extractor, Matcher, Residency};
use crate::msgs::{self, DiagnosticArray, Header, Image, KeyValue};
use crate::types::{Features, Match};
use checked::{CheckedPixels, Submitted};
use stats::{Identity, Stats};
use stereo::{Extracted, StereoPairer};

/// How often diagnostics are published.
pub const DIAGNOSTICS_PERIOD: Duration = Duration::from_secs(1);

/// How long the processing thread waits for a frame before it looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(100);

/// How often a node waiting for a `features` subscriber looks again.
const SUBSCRIBER_POLL: Duration = Duration::from_millis(50);

/// Where the runtime's messages go; each transport implements it.
pub trait Outputs {
    fn publish_features(&self, message: msgs::Features) -> Result<()>;
    fn publish_matches(&self, message: msgs::Matches) -> Result<()>;
    fn publish_diagnostics(&self, message: DiagnosticArray) -> Result<()>;
    fn publish_debug_image(&self, message: Image) -> Result<()>;
    /// Whether anyone subscribes to `debug_image`: drawing costs, so only then.
    fn wants_debug_image(&self) -> bool;
    /// The captured frame on `image` (camera input with `input.publish_image`).
    fn publish_image(&self, message: Image) -> Result<()>;
    /// Whether anyone subscribes to `features` (a file read with `input.realtime:
    /// false` waits for it, so that no frame is processed for nobody).
    fn features_subscribed(&self) -> bool;
}

/// The topics the runtime reads for `mode`, relative to the node's namespace.
pub fn input_topics(mode: MatchMode) -> &'static [(Camera, &'static str)] {
    match mode {
        MatchMode::None | MatchMode::Temporal => &[(Camera::Mono, "image")],
        MatchMode::Stereo => &[(Camera::Left, "left/image"), (Camera::Right, "right/image")],
    }
}

/// Extraction and matching state of one running node.
pub struct Node {
    name: String,
    config: NodeConfig,
    /// Where parameter changes arrive from the transport's services.
    parameters: Arc<LiveParameters>,
    /// The change of `parameters` last applied.
    applied: u64,
    extractor: Box<dyn Extractor>,
    matcher: Box<dyn Matcher>,
    /// Temporal and stereo matching run in the extractor (on the GPU, beside the
    /// previous frame's or the other camera's descriptors) rather than in `matcher`.
    extractor_matches: bool,
    previous: Option<Extracted>,
    /// Frames handed to the extractor whose features have not come back yet, oldest
    /// first (at most one: the frame whose kernels run while the next one uploads).
    in_flight: VecDeque<Submitted>,
    stereo: StereoPairer,
    stats: Stats,
    rejections: Throttle,
    failures: Throttle,
}

impl Node {
    /// A node named `name` (for diagnostics) with the backends `config` asks for.
    pub fn new(name: &str, config: NodeConfig) -> Result<Self> {
        let extractor = crate::create_extractor(&config.library)?;
        let matcher = crate::create_matcher(&config.library)?;
        Ok(Self::with_backends(name, config, extractor, matcher))
    }

    /// A node over the given extractor and matcher.
    pub fn with_backends(
        name: &str,
        config: NodeConfig,
        extractor: Box<dyn Extractor>,
        matcher: Box<dyn Matcher>,
    ) -> Self {
        let tolerance = config.matching.sync_tolerance;
        let mut node = Self {
            name: name.to_string(),
            parameters: Arc::new(LiveParameters::new(name, config.clone())),
            applied: 0,
            config,
            extractor,
            matcher,
            extractor_matches: false,
            previous: None,
            in_flight: VecDeque::new(),
            stereo: StereoPairer::new(tolerance),
            stats: Stats::default(),
            rejections: Throttle::new(Duration::from_secs(2)),
            failures: Throttle::new(Duration::from_secs(2)),
        };
        node.place_matching();
        node.decode_frames_for_extractor();
        node
    }

    /// Image data is decoded where the extractor uploads it from without a copy, if it
    /// offers such memory ([`crate::frame_memory`]).
    fn decode_frames_for_extractor(&self) {
        if let Some(pool) = self.extractor.receive_pool() {
            crate::frame_memory::decode_frames_into(Some(&pool));
        }
    }

    /// Matching goes to the extractor where it can match frames with features it
    /// keeps (the GPU keeps the previous frame's, or each camera's latest), else to
    /// the matcher. Placing it again empties what the extractor kept.
    fn place_matching(&mut self) {
        let matching = self.config.matching.mode != MatchMode::None;
        let wanted = matching.then_some(&self.config.library.matching);
        self.extractor_matches = match self.extractor.match_resident(wanted) {
            Ok(accepted) => accepted,
            Err(err) => {
                self.failures.warn(&format!(
                    "matching in the extractor unavailable, using the matcher: {}",
                    err.one_line()
                ));
                false
            }
        };
    }

    /// Processes the frames of `source` until it ends or `stop` is set, publishing
    /// diagnostics and logging a summary once a second, and the totals at the end.
    /// Errs when the source fails (a camera that stopped delivering).
    pub fn run(
        &mut self,
        source: &mut dyn FrameSource,
        outputs: &dyn Outputs,
        stop: &AtomicBool,
    ) -> Result<()> {
        if source.waits_for_subscriber() {
            log::info!(
                "waiting for a subscriber to `features` before reading (input.realtime: false)"
            );
            while !outputs.features_subscribed() {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                std::thread::sleep(SUBSCRIBER_POLL);
            }
        }
        let mut next_report = Instant::now() + DIAGNOSTICS_PERIOD;
        // The frame counts of the last logged summary: an idle node logs once, not every second.
        let mut logged_counts = None;
        let ended = loop {
            if stop.load(Ordering::Relaxed) {
                self.finish_in_flight(outputs);
                break Ok(());
            }
            // A frame in flight waits for no new one: only a frame already there is
            // taken to overlap it, else it is finished at once.
            let deadline = if self.in_flight.is_empty() {
                next_report.min(Instant::now() + STOP_POLL)
            } else {
                Instant::now()
            };
            let next = source.next(deadline);
            if !matches!(next, Ok(Next::Frame(_))) {
                self.finish_in_flight(outputs);
            }
            match next {
                Ok(Next::Frame(frame)) => self.handle(*frame, outputs),
                Ok(Next::Unreadable { count, reason }) => self.unreadable(count, reason),
                Ok(Next::Idle) => {}
                Ok(Next::End) => break Ok(()),
                Err(err) => break Err(err),
            }
            let now = Instant::now();
            if now >= next_report {
                let report = self.diagnostics(source.dropped(), source.arrivals());
                let counts = stats::frame_counts(&report);
                if logged_counts.as_ref() != Some(&counts) {
                    log::info!("{}", stats::summary(&report));
                    logged_counts = Some(counts);
                }
                self.publish(outputs.publish_diagnostics(report));
                // After a stall (a slow first frame), report from now on.
                next_report = (next_report + DIAGNOSTICS_PERIOD).max(now);
            }
        };
        // The totals, for whoever watches the diagnostics of a finished file.
        let report = self.diagnostics(source.dropped(), source.arrivals());
        self.publish(outputs.publish_diagnostics(report));
        ended
    }

    /// The diagnostics report now; `dropped` and `arrivals` come from the frame source.
    pub fn diagnostics(&mut self, dropped: u64, arrivals: Option<Arrivals>) -> DiagnosticArray {
        let device = self.extractor.device_name();
        let who = Identity {
            node_name: &self.name,
            algorithm: self.config.library.algorithm.name(),
            backend: self.extractor.backend_name(),
            device: &device,
        };
        let mut report = self.stats.report(&who, dropped, arrivals);
        if let (Some(pool), Some(status)) =
            (self.extractor.receive_pool(), report.status.first_mut())
        {
            let stats = pool.stats();
            status.values.extend([
                KeyValue {
                    key: "frames_received_page_locked".into(),
                    value: stats.decoded.to_string(),
                },
                KeyValue {
                    key: "frames_received_copied".into(),
                    value: stats.missed.to_string(),
                },
            ]);
        }
        report
    }

    /// Frames rejected so far.
    pub fn rejected_frames(&self) -> u64 {
        self.stats.rejected_count()
    }

    /// The node's parameters, for the transport to serve.
    pub fn parameters(&self) -> Arc<LiveParameters> {
        self.parameters.clone()
    }

    /// Takes the parameters changed since the last frame: new extraction or matching
    /// settings rebuild what they concern, on the backend already in use.
    fn apply_parameter_changes(&mut self, outputs: &dyn Outputs) {
        let Some(config) = self.parameters.changed_since(&mut self.applied) else {
            return;
        };
        // New settings may rebuild the extractor: the frames it holds go out first.
        self.finish_in_flight(outputs);
        let mut on_this_backend = config.clone();
        on_this_backend.library.backend = match self.extractor.backend_name() {
            "cuda" => Backend::Cuda,
            _ => Backend::Cpu,
        };
        let extraction_changed = config.library.orb != self.config.library.orb
            || config.library.sift != self.config.library.sift;
        let matching_changed = config.library.matching != self.config.library.matching;
        if extraction_changed {
            match crate::create_extractor(&on_this_backend.library) {
                Ok(extractor) => {
                    self.extractor = extractor;
                    self.decode_frames_for_extractor();
                }
                Err(err) => self.failures.warn(&format!(
                    "keeping the previous extractor: {}",
                    err.one_line()
                )),
            }
        }
        if matching_changed {
            match crate::create_matcher(&on_this_backend.library) {
                Ok(matcher) => self.matcher = matcher,
                Err(err) => self
                    .failures
                    .warn(&format!("keeping the previous matcher: {}", err.one_line())),
            }
        }
        self.stereo.set_tolerance(config.matching.sync_tolerance);
        log::info!("parameters changed: applied from this frame on");
        self.config = config;
        // Only a new extractor or new matching settings restart the extractor's
        // matching (the next temporal frame then has no Matches).
        if extraction_changed || matching_changed {
            self.place_matching();
        }
    }

    /// Extracts, publishes and matches one frame; a bad frame is counted and skipped.
    /// With an extractor that overlaps frames, the frame's features may come back with
    /// the next frame's `handle` or with [`finish_in_flight`](Self::finish_in_flight).
    pub fn handle(&mut self, frame: Frame, outputs: &dyn Outputs) {
        self.apply_parameter_changes(outputs);
        let Frame {
            camera,
            header,
            pixels,
            received,
            republish,
        } = frame;
        if let Some(image) = republish {
            let published = outputs.publish_image(image);
            self.publish(published);
        }
        let max_pixels = self.config.library.max_image_pixels;
        // Raw frames go to the extractor as they are (a GPU converts them itself);
        // only their fields are checked here.
        let checked = match pixels {
            Pixels::Raw(image) => msgs::raw_frame(&image, max_pixels)
                .map(|_| ())
                .map(|()| CheckedPixels::Raw(image)),
            Pixels::Compressed(image) => {
                msgs::gray_from_compressed(&image, max_pixels).map(CheckedPixels::Gray)
            }
            Pixels::Gray(gray) => Ok(CheckedPixels::Gray(gray)),
        };
        match checked {
            Ok(pixels) => self.handle_checked(camera, header, pixels, received, outputs),
            Err(reason) => {
                let reason = reason.one_line();
                let stamp = header.stamp;
                self.rejections.warn(&format!(
                    "rejected a frame from {camera:?} (stamp {}.{:09}, frame_id {:?}): {reason}",
                    stamp.sec, stamp.nanosec, header.frame_id
                ));
                self.stats.rejected(1, reason);
            }
        }
    }

    /// `count` frames that arrived but could not be read: counted as rejected.
    pub fn unreadable(&mut self, count: u64, reason: String) {
        self.rejections
            .warn(&format!("cannot read a frame: {reason}"));
        self.stats.rejected(count, reason);
    }

    /// Hands one frame of `camera` whose pixels were checked, stamped by `header` and
    /// received at `received` (the start of its latency), to the extractor, and
    /// completes the frame whose features come back.
    fn handle_checked(
        &mut self,
        camera: Camera,
        header: Header,
        pixels: CheckedPixels,
        received: Instant,
        outputs: &dyn Outputs,
    ) {
        if self.extractor_matches {
            let residency = residency(self.config.matching.mode, camera);
            self.extractor.set_residency(residency);
        }
        let submitted = pixels.submit(self.extractor.as_mut());
        self.in_flight.push_back(Submitted {
            camera,
            header,
            pixels,
            received,
        });
        match submitted {
            Ok(Some(features)) => self.complete(features, outputs),
            Ok(None) => {}
            Err(err) => self.lose_in_flight(&err.one_line()),
        }
    }

    /// Publishes the frames still in the extractor, oldest first.
    pub fn finish_in_flight(&mut self, outputs: &dyn Outputs) {
        while !self.in_flight.is_empty() {
            match self.extractor.finish_frame() {
                Ok(Some(features)) => self.complete(features, outputs),
                Ok(None) => self.lose_in_flight("the extractor holds no frame in flight"),
                Err(err) => self.lose_in_flight(&err.one_line()),
            }
        }
    }

    /// The frames in flight failed with `reason` (an extractor that fails loses them
    /// all): each is counted. What the extractor kept for matching may be theirs,
    /// which the node never saw: its matching starts again.
    fn lose_in_flight(&mut self, reason: &str) {
        self.failures.warn(&format!("extraction failed: {reason}"));
        for _ in self.in_flight.drain(..) {
            self.stats.failed();
        }
        if self.extractor_matches {
            self.place_matching();
        }
    }

    /// Publishes and matches the oldest frame in flight, whose features these are.
    fn complete(&mut self, features: Features, outputs: &dyn Outputs) {
        let Some(Submitted {
            camera,
            header,
            pixels,
            received,
        }) = self.in_flight.pop_front()
        else {
            return;
        };
        let message =
            msgs::features_message(header.clone(), self.config.library.algorithm, &features);
        self.publish(outputs.publish_features(message));
        self.stats
            .processed(received.elapsed(), header.stamp, features.keypoints.len());

        let current = Extracted {
            header,
            pixels,
            features,
        };
        match (self.config.matching.mode, camera) {
            (MatchMode::None, _) => self.draw_keypoints(&current, outputs),
            (MatchMode::Temporal, _) => {
                let previous = self.previous.take();
                let matched = if self.extractor_matches {
                    self.extractor.resident_matches().map(Ok)
                } else {
                    previous.as_ref().map(|previous| {
                        self.matcher
                            .match_features(&current.features, &previous.features)
                    })
                };
                match (matched, &previous) {
                    (Some(matches), Some(previous)) => {
                        self.publish_matches(&current, previous, "temporal", matches, outputs)
                    }
                    _ => self.draw_keypoints(&current, outputs),
                }
                self.previous = Some(current);
            }
            (MatchMode::Stereo, camera) => {
                // The extractor matched this frame with the other camera's latest
                // frame, the one a pair made now holds; taken with every frame, as
                // they belong to this frame alone.
                let resident = self.extractor.resident_matches();
                let pair = if camera == Camera::Right {
                    self.stereo.offer_right(current)
                } else {
                    self.stereo.offer_left(current)
                };
                if let Some((left, right)) = pair {
                    // None: the extractor does not match, or restarted its matching
                    // after the other frame.
                    let matches = match resident {
                        Some(matches) => Ok(matches),
                        None => self.matcher.match_features(&left.features, &right.features),
                    };
                    self.publish_matches(&left, &right, "stereo", matches, outputs);
                }
            }
        }
    }

    /// Publishes the matches of `query` against `train` (and their debug image), or
    /// counts the failure that kept them from being made.
    fn publish_matches(
        &mut self,
        query: &Extracted,
        train: &Extracted,
        mode: &str,
        matches: Result<Vec<Match>>,
        outputs: &dyn Outputs,
    ) {
        match matches {
            Ok(matches) => {
                self.stats.matched(matches.len());
                let message = matches_message(&query.header, &train.header, mode, &matches);
                self.publish(outputs.publish_matches(message));
                if outputs.wants_debug_image() {
                    let pictures = query.pixels.gray().and_then(|query_gray| {
                        let train_gray = train.pixels.gray()?;
                        Ok(draw::draw_matches(
                            &query_gray,
                            &query.features.keypoints,
                            &train_gray,
                            &train.features.keypoints,
                            &matches,
                        ))
                    });
                    let published = pictures.and_then(|picture| {
                        outputs.publish_debug_image(rgb_message(query.header.clone(), picture))
                    });
                    self.publish(published);
                }
            }
            Err(err) => {
                self.failures
                    .warn(&format!("{mode} matching failed: {}", err.one_line()));
                self.stats.failed();
            }
        }
    }

    /// The debug image of a frame that has nothing to be matched with yet.
    fn draw_keypoints(&mut self, frame: &Extracted, outputs: &dyn Outputs) {
        if outputs.wants_debug_image() {
            let published = frame.pixels.gray().and_then(|gray| {
                let picture = draw::draw_keypoints(&gray, &frame.features.keypoints);
                outputs.publish_debug_image(rgb_message(frame.header.clone(), picture))
            });
            self.publish(published);
        }
    }

    fn publish(&mut self, result: Result<()>) {
        if let Err(err) = result {
            self.failures
                .warn(&format!("publishing failed: {}", err.one_line()));
        }
    }
}

/// How an extractor that matches resident features matches and keeps a frame of
/// `camera`: in temporal mode each frame against the previous one; in stereo the left
/// frame is the query, whichever of a pair comes first.
fn residency(mode: MatchMode, camera: Camera) -> Residency {
    match (mode, camera) {
        (MatchMode::Stereo, Camera::Right) => Residency::RIGHT,
        (MatchMode::Stereo, _) => Residency::LEFT,
        _ => Residency::PREVIOUS,
    }
}

/// A drawn picture as an rgb8 `sensor_msgs/Image`.
fn rgb_message(header: Header, picture: image::RgbImage) -> Image {
    let (width, height) = picture.dimensions();
    Image {
        header,
        height,
        width,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: width * 3,
        data: picture.into_raw().into(),
    }
}

fn matches_message(query: &Header, train: &Header, mode: &str, matches: &[Match]) -> msgs::Matches {
    msgs::Matches {
        header: query.clone(),
        train_header: train.clone(),
        mode: mode.to_string(),
        query_idx: matches.iter().map(|m| m.query).collect(),
        train_idx: matches.iter().map(|m| m.train).collect(),
        distance: matches.iter().map(|m| m.distance).collect(),
    }
}

#[cfg(test)]
mod tests;
