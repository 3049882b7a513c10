//! The video player (tests/peer/play_video.py, a Cyclone DDS peer on topic input): the
//! bundled sample video played into orbsift_node on the default parameters comes back
//! as Features and temporal matches, and the player fails loudly when nothing answers.
//! The node's own behaviour is judged by tests/node_peer.rs.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::peer::{project_dir, python, test_data};
use common::ros::Running;
use serde::Deserialize;

const SAMPLE: &str = "vtest_6s.avi";
/// Frames in the sample: 6 s at 10 fps.
const SAMPLE_FRAMES: u64 = 60;

#[derive(Debug, Deserialize)]
struct Summary {
    frames_sent: u64,
    frames_answered: u64,
    matches_messages: u64,
    mean_keypoints: f64,
    mean_matches: f64,
    backend: Option<String>,
}

/// Runs the player on `video` in `domain`, killed after `limit`.
fn play(video: &Path, domain: &str, args: &[&str], limit: Duration) -> Output {
    let mut player = Command::new(python())
        .arg(project_dir().join("tests/peer/play_video.py"))
        .arg(video)
        .args(args)
        .env("ROS_DOMAIN_ID", domain)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the player");
    let deadline = Instant::now() + limit;
    while player.try_wait().expect("poll the player").is_none() {
        if Instant::now() > deadline {
            let _ = player.kill();
            panic!("the player did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    player.wait_with_output().expect("player output")
}

/// A ROS domain of this test process; tests in one process use distinct `slot`s.
fn domain(slot: u32) -> String {
    (60 + 3 * (std::process::id() % 13) + slot).to_string()
}

#[test]
fn the_sample_video_played_into_the_default_node_comes_back_as_features_and_matches() {
    let domain = domain(0);
    let _node = Running(
        Command::new(env!("CARGO_BIN_EXE_orbsift_node"))
            .env("ROS_DOMAIN_ID", &domain)
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("start orbsift_node"),
    );
    let dir = tempfile::tempdir().unwrap();
    let summary_path = dir.path().join("summary.json");
    let output = play(
        &test_data(SAMPLE),
        &domain,
        &[
            "--wait",
            "60",
            "--summary-json",
            summary_path.to_str().unwrap(),
        ],
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "player failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Summary = serde_json::from_slice(&std::fs::read(&summary_path).unwrap()).unwrap();
    assert_eq!(summary.frames_sent, SAMPLE_FRAMES, "{summary:?}");
    // The latest frame wins when the node is slower than the video, so a loaded
    // machine may drop some; most must still come back.
    assert!(
        summary.frames_answered * 2 >= SAMPLE_FRAMES,
        "{summary:?}\n{stdout}"
    );
    assert!(summary.mean_keypoints > 1000.0, "{summary:?}");
    // A fixed camera: most of the scene is static, so consecutive frames match well.
    assert!(
        summary.matches_messages + 1 >= summary.frames_answered,
        "{summary:?}"
    );
    assert!(
        summary.mean_matches > 0.3 * summary.mean_keypoints,
        "{summary:?}"
    );
    assert!(summary.backend.is_some(), "no diagnostics: {summary:?}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("features") && l.contains("fps")),
        "no live summary line:\n{stdout}"
    );
}

/// Plays `file` with no node to answer: the player exits with `status` and says `why`.
fn assert_player_fails(file: &str, slot: u32, status: i32, why: &str) {
    let output = play(
        &test_data(file),
        &domain(slot),
        &["--wait", "1"],
        Duration::from_secs(30),
    );
    assert_eq!(output.status.code(), Some(status), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(why),
        "{output:?}"
    );
}

#[test]
fn the_player_fails_when_no_node_answers() {
    assert_player_fails(SAMPLE, 1, 1, "no orbsift_node answered");
}

#[test]
fn the_player_refuses_a_file_that_is_not_a_video() {
    assert_player_fails("H1to3p.xml", 2, 2, "cannot read");
}
