//! orbsift_node reading a video or an image sequence itself (`input.source: camera`),
//! heard by a subscriber of another DDS (Cyclone DDS; for the video also a ROS 2 node,
//! rclpy over Fast DDS): one Features message per frame of the file (frames
//! counted by the pip OpenCV, not the library the node links), temporal Matches
//! between consecutive frames, a clean exit at the end; start-up failures exit
//! non-zero with the culprit named.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::listener::{HeardFeatures, HeardMatches, Peer, ResultListener};
use common::peer::{self, test_data};
use orbsift::{Backend, Config, GrayImage};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct VideoFrames {
    frames: usize,
    width: u32,
    height: u32,
}

/// The frame count and size of `video` as the pip OpenCV reads it.
fn count_frames(video: &Path) -> VideoFrames {
    peer::run("video_frames.py", &[video.as_os_str()])
}

/// A DDS domain per test (`test` < 5), so tests running at once do not hear each other.
fn domain(test: u32) -> u16 {
    (60 + (std::process::id() % 30) * 5 + test) as u16
}

fn node(domain: u16, params: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_orbsift_node"));
    command
        .arg("--ros-args")
        .args(["-p", "backend:=cpu", "-p", "input.source:=camera"])
        .args(params.iter().flat_map(|p| ["-p", p]))
        .env("ROS_DOMAIN_ID", domain.to_string())
        .env("RUST_LOG", "info,rustdds=warn,ros2_client=warn");
    command
}

/// What the node published before it exited by itself, as an independent subscriber
/// heard it.
struct Heard {
    status: ExitStatus,
    log: String,
    features: Vec<HeardFeatures>,
    matches: Vec<HeardMatches>,
    last_diagnostics: Option<HashMap<String, String>>,
}

impl Heard {
    fn diagnostic(&self, key: &str) -> &str {
        let report = self.last_diagnostics.as_ref().expect("no diagnostics");
        report
            .get(key)
            .unwrap_or_else(|| panic!("no {key} in the diagnostics"))
    }
}

/// `listener` subscribes first, then the node starts, and `listener` listens until it
/// exits (within 240 s); `full` asks for every keypoint's x and descriptor.
fn run_and_listen(listener: Peer, domain: u16, params: &[&str], full: bool) -> Heard {
    let mut listener = ResultListener::start(listener, domain, full);
    let mut child = node(domain, params)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start orbsift_node");
    let deadline = Instant::now() + Duration::from_secs(240);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            listener.kill();
            panic!("orbsift_node did not finish the file within 240 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // What was in flight when the node exited.
    std::thread::sleep(Duration::from_millis(500));
    let listened = listener.finish();
    let output = child.wait_with_output().unwrap();
    Heard {
        status: output.status,
        log: String::from_utf8_lossy(&output.stderr).into_owned(),
        features: listened.features,
        matches: listened.matches,
        last_diagnostics: listened.diagnostics,
    }
}

fn seconds((sec, nanosec): (i32, u32)) -> f64 {
    sec as f64 + nanosec as f64 * 1e-9
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn every_frame_of_a_video_file_gives_features_and_temporal_matches() {
    every_frame_of_a_video_file_is_heard_by(Peer::CycloneDds, domain(0));
}

#[test]
fn a_ros_2_node_hears_every_frame_of_a_video_file() {
    every_frame_of_a_video_file_is_heard_by(Peer::Rclpy, domain(4));
}

fn every_frame_of_a_video_file_is_heard_by(listener: Peer, domain: u16) {
    let video = test_data("vtest_6s.avi");
    let truth = count_frames(&video);
    assert!(truth.frames >= 30, "{truth:?}");
    let video_param = format!("input.device:={}", video.display());
    let heard = run_and_listen(
        listener,
        domain,
        &[
            &video_param,
            "input.realtime:=false",
            "input.frame_id:=vtest",
        ],
        false,
    );
    assert!(heard.status.success(), "{}\n{}", heard.status, heard.log);
    assert!(heard.log.contains("end of"), "{}", heard.log);

    assert_eq!(heard.features.len(), truth.frames, "{}", heard.log);
    for f in &heard.features {
        assert_eq!(f.frame_id, "vtest");
        assert_eq!((f.width, f.height), (truth.width, truth.height));
        assert!(
            f.keypoints > 500,
            "{} keypoints on a real frame",
            f.keypoints
        );
    }
    // Stamped at capture, in capture order.
    let stamps: Vec<f64> = heard.features.iter().map(|f| seconds(f.stamp)).collect();
    assert!(stamps.windows(2).all(|w| w[0] < w[1]), "{stamps:?}");

    // Each frame after the first matched against the one before it.
    assert_eq!(heard.matches.len(), truth.frames - 1, "{}", heard.log);
    for (m, pair) in heard.matches.iter().zip(heard.features.windows(2)) {
        assert_eq!(m.mode, "temporal");
        assert_eq!((m.stamp, &m.frame_id), (pair[1].stamp, &pair[1].frame_id));
        assert_eq!(
            (m.train_stamp, &m.train_frame_id),
            (pair[0].stamp, &pair[0].frame_id)
        );
        // A fixed camera watching people walk: most corners stay put between frames.
        assert!(
            m.query_idx.len() * 2 > pair[1].keypoints,
            "{} matches for {} keypoints",
            m.query_idx.len(),
            pair[1].keypoints
        );
        assert!(m
            .query_idx
            .iter()
            .all(|&i| (i as usize) < pair[1].keypoints));
        assert!(m
            .train_idx
            .iter()
            .all(|&i| (i as usize) < pair[0].keypoints));
    }
    assert_eq!(
        heard.diagnostic("frames_processed"),
        truth.frames.to_string()
    );
    assert_eq!(heard.diagnostic("frames_rejected"), "0");
}

#[test]
fn an_image_sequence_is_read_in_order_and_converted_as_the_library_reads_files() {
    let dir = tempfile::tempdir().unwrap();
    // Frames of one size, as a camera gives them.
    let sources = ["basketball1.png", "basketball2.png", "basketball1.png"];
    for (i, name) in sources.iter().enumerate() {
        std::fs::copy(
            test_data(name),
            dir.path().join(format!("frame_{i:03}.png")),
        )
        .unwrap();
    }
    let pattern = dir.path().join("frame_%03d.png");
    let param = format!("input.device:={}", pattern.display());
    let heard = run_and_listen(
        Peer::CycloneDds,
        domain(1),
        &[&param, "input.realtime:=false"],
        true,
    );
    assert!(heard.status.success(), "{}\n{}", heard.status, heard.log);
    assert_eq!(heard.features.len(), sources.len(), "{}", heard.log);

    // The node's grey frames are the library's own reading of the files.
    let config = Config {
        backend: Backend::Cpu,
        ..Config::default()
    };
    let mut extractor = orbsift::create_extractor(&config).unwrap();
    for (message, name) in heard.features.iter().zip(sources) {
        let image = GrayImage::open(&test_data(name)).unwrap();
        let expected = extractor.extract(&image).unwrap();
        assert_eq!(message.width as usize, image.width(), "{name}");
        assert_eq!(message.x, expected.keypoints.x, "{name}");
        assert_eq!(
            message.descriptors,
            hex(&expected.descriptors.data),
            "{name}"
        );
    }
}

#[test]
fn a_gstreamer_pipeline_is_read_and_its_silence_ends_the_node_without_spinning() {
    let pipeline = "input.device:=videotestsrc pattern=ball num-buffers=20 \
        ! video/x-raw,width=320,height=240 ! videoconvert ! video/x-raw,format=BGR ! appsink";
    let started = Instant::now();
    let heard = run_and_listen(
        Peer::CycloneDds,
        domain(3),
        &[pipeline, "input.frame_id:=gst"],
        false,
    );
    // A live source does not wait for subscribers: the first frames may go out before
    // discovery has matched the listener, so every frame is counted by the node itself.
    assert_eq!(heard.diagnostic("frames_processed"), "20", "{}", heard.log);
    assert!((10..=20).contains(&heard.features.len()), "{}", heard.log);
    for f in &heard.features {
        assert_eq!(f.frame_id, "gst");
        assert_eq!((f.width, f.height), (320, 240));
        assert!(f.keypoints > 0, "a moving ball has corners");
    }
    assert!(!heard.matches.is_empty());
    // A pipeline is a live source: after its last buffer it is lost, not finished.
    assert!(!heard.status.success(), "{}", heard.log);
    assert!(heard.log.contains("no frame for 5 s"), "{}", heard.log);
    assert!(started.elapsed() >= Duration::from_secs(5));
    // Failed reads are retried every 10 ms, not in a busy loop.
    let failed: u64 = heard.diagnostic("frames_rejected").parse().unwrap();
    assert!((1..=600).contains(&failed), "{failed} failed reads in 5 s");
}

fn failed_start(params: &[&str]) -> String {
    let output = node(domain(2), params).output().expect("run orbsift_node");
    assert!(!output.status.success(), "{params:?} started");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn unusable_sources_stop_the_start_with_a_clear_message() {
    let not_a_video = test_data("H1to3p.xml");
    let not_a_video = format!("input.device:={}", not_a_video.display());
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "this is not a video\n").unwrap();
    let text = format!("input.device:={}", text.display());
    let png = std::fs::read(test_data("graf1.png")).unwrap();
    let truncated_png = dir.path().join("truncated.png");
    std::fs::write(&truncated_png, &png[..png.len() / 3]).unwrap();
    let truncated_png = format!("input.device:={}", truncated_png.display());
    for (params, expected) in [
        (
            &["input.device:=/nonexistent/clip.avi"][..],
            "/nonexistent/clip.avi: no such file",
        ),
        (&[not_a_video.as_str()], "cannot be opened"),
        (&[text.as_str()], "cannot be opened"),
        (&[truncated_png.as_str()], "no frame could be decoded"),
        (&["input.device:=63"], "camera 63: cannot be opened"),
        (
            &["input.device:=videotestsrc ! no_such_element ! appsink"],
            "cannot be opened",
        ),
        (&["input.device:=videotestsrc ! fakesink"], "appsink"),
        (&["input.fps:=-5"], "input.fps"),
    ] {
        let stderr = failed_start(params);
        assert!(stderr.contains(expected), "{params:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{params:?}: {stderr}");
        // OpenCV's own complaints, and GStreamer's GLib lines about a pipeline that never
        // started, stay out of the node's output.
        for noise in ["[ WARN", "[ERROR", "CRITICAL", "GStreamer-WARNING"] {
            assert!(!stderr.contains(noise), "{params:?}: {stderr}");
        }
    }
}
