//! What the node reports on `diagnostics`: throughput, latency, frame age, lost frames.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::Arrivals;
use crate::msgs::{DiagnosticArray, DiagnosticStatus, Header, KeyValue, Time};

/// Latencies kept for the percentiles: the last few seconds at camera rates.
const LATENCY_WINDOW: usize = 512;

/// Counters and bounded windows of latencies and ages.
pub struct Stats {
    /// Received by this process → Features handed to the transport.
    latencies: VecDeque<Duration>,
    /// `header.stamp` → Features handed to the transport: what the frame spent in the
    /// camera driver, the sender and the transport too.
    ages: VecDeque<Duration>,
    processed: u64,
    rejected: u64,
    failed: u64,
    last_rejection: String,
    window_start: Instant,
    window_frames: u64,
    window_keypoints: u64,
    window_matches: u64,
    window_match_sets: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            latencies: VecDeque::with_capacity(LATENCY_WINDOW),
            ages: VecDeque::with_capacity(LATENCY_WINDOW),
            processed: 0,
            rejected: 0,
            failed: 0,
            last_rejection: String::new(),
            window_start: Instant::now(),
            window_frames: 0,
            window_keypoints: 0,
            window_matches: 0,
            window_match_sets: 0,
        }
    }
}

/// Who runs the extraction, for the report.
pub struct Identity<'a> {
    pub node_name: &'a str,
    pub algorithm: &'a str,
    pub backend: &'a str,
    pub device: &'a str,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn mean(total: u64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        total as f64 / count as f64
    }
}

fn millis(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

fn push_bounded(window: &mut VecDeque<Duration>, value: Duration) {
    if window.len() == LATENCY_WINDOW {
        window.pop_front();
    }
    window.push_back(value);
}

fn p50_p99(window: &VecDeque<Duration>) -> (Duration, Duration) {
    let mut sorted: Vec<Duration> = window.iter().copied().collect();
    sorted.sort_unstable();
    (percentile(&sorted, 0.5), percentile(&sorted, 0.99))
}

/// How long ago `stamp` was on this machine's wall clock; `None` for a zero stamp
/// (the sender set none) or one in the future (another machine's clock runs ahead).
fn age_of(stamp: Time) -> Option<Duration> {
    if stamp == Time::default() {
        return None;
    }
    let stamped =
        UNIX_EPOCH.checked_add(Duration::new(u64::try_from(stamp.sec).ok()?, stamp.nanosec))?;
    SystemTime::now().duration_since(stamped).ok()
}

impl Stats {
    /// A frame stamped `stamp`, with `keypoints`, published `latency` after it was received.
    pub fn processed(&mut self, latency: Duration, stamp: Time, keypoints: usize) {
        push_bounded(&mut self.latencies, latency);
        if let Some(age) = age_of(stamp) {
            push_bounded(&mut self.ages, age);
        }
        self.processed += 1;
        self.window_frames += 1;
        self.window_keypoints += keypoints as u64;
    }

    /// A Matches message with `matches` matches.
    pub fn matched(&mut self, matches: usize) {
        self.window_matches += matches as u64;
        self.window_match_sets += 1;
    }

    /// `count` frames rejected, the last one for `reason`.
    pub fn rejected(&mut self, count: u64, reason: String) {
        self.rejected += count;
        self.last_rejection = reason;
    }

    pub fn failed(&mut self) {
        self.failed += 1;
    }

    pub fn rejected_count(&self) -> u64 {
        self.rejected
    }

    /// The report; fps covers the frames since the previous report. `arrivals` (topic
    /// input) adds what the transport received and what its stack lost.
    pub fn report(
        &mut self,
        who: &Identity<'_>,
        dropped: u64,
        arrivals: Option<Arrivals>,
    ) -> DiagnosticArray {
        let elapsed = self.window_start.elapsed().as_secs_f64();
        let fps = if elapsed > 0.0 {
            self.window_frames as f64 / elapsed
        } else {
            0.0
        };
        let keypoints_per_frame = mean(self.window_keypoints, self.window_frames);
        let matches_per_frame = mean(self.window_matches, self.window_match_sets);
        self.window_start = Instant::now();
        self.window_frames = 0;
        self.window_keypoints = 0;
        self.window_matches = 0;
        self.window_match_sets = 0;
        let (p50, p99) = p50_p99(&self.latencies);
        let (age_p50, age_p99) = p50_p99(&self.ages);
        let mut pairs = vec![
            ("algorithm", who.algorithm.to_string()),
            ("backend", who.backend.to_string()),
            ("device", who.device.to_string()),
            ("fps", format!("{fps:.2}")),
            ("keypoints_per_frame", format!("{keypoints_per_frame:.0}")),
            ("matches_per_frame", format!("{matches_per_frame:.0}")),
            ("latency_p50_ms", millis(p50)),
            ("latency_p99_ms", millis(p99)),
            ("age_p50_ms", millis(age_p50)),
            ("age_p99_ms", millis(age_p99)),
            ("frames_processed", self.processed.to_string()),
            ("frames_dropped", dropped.to_string()),
            ("frames_rejected", self.rejected.to_string()),
            ("frames_failed", self.failed.to_string()),
            ("last_rejection", self.last_rejection.clone()),
        ];
        if let Some(arrivals) = arrivals {
            pairs.extend([
                ("frames_received", arrivals.received.to_string()),
                ("frames_lost_in_stack", arrivals.lost_in_stack.to_string()),
            ]);
        }
        let healthy = self.failed == 0;
        DiagnosticArray {
            header: Header {
                stamp: Time::now(),
                frame_id: String::new(),
            },
            status: vec![DiagnosticStatus {
                level: if healthy {
                    DiagnosticStatus::OK
                } else {
                    DiagnosticStatus::WARN
                },
                name: format!("{}: feature extraction", who.node_name),
                message: if healthy {
                    "running".into()
                } else {
                    "extraction failed on some frames".into()
                },
                hardware_id: who.device.to_string(),
                values: pairs
                    .into_iter()
                    .map(|(key, value)| KeyValue {
                        key: key.into(),
                        value,
                    })
                    .collect(),
            }],
        }
    }
}

/// The frame totals of a report: what changes while frames flow.
pub fn frame_counts(report: &DiagnosticArray) -> [Option<String>; 3] {
    ["frames_processed", "frames_dropped", "frames_rejected"]
        .map(|key| report.value(key).map(str::to_string))
}

/// The diagnostics in one log line: what a user watching the node sees.
pub fn summary(report: &DiagnosticArray) -> String {
    let value = |key| report.value(key).unwrap_or("?");
    format!(
        "{} fps, {} keypoints/frame, {} matches/frame, latency p50 {} ms p99 {} ms, age p50 {} ms; frames: {} processed, {} dropped, {} rejected",
        value("fps"),
        value("keypoints_per_frame"),
        value("matches_per_frame"),
        value("latency_p50_ms"),
        value("latency_p99_ms"),
        value("age_p50_ms"),
        value("frames_processed"),
        value("frames_dropped"),
        value("frames_rejected"),
    )
}
