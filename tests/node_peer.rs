//! orbsift_node against a ROS 2 peer that is not this code: Eclipse Cyclone DDS
//! from Python (tests/peer/orbsift_peer.py) publishes real images and malformed
//! frames and reports what the node answered; this test judges the report.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Kills the node when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn venv_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    assert!(
        python.exists(),
        "the peer test needs the Python venv: python3 -m venv .venv && \
         .venv/bin/pip install -r tests/peer/requirements.txt"
    );
    python
}

fn run_peer(domain: &str) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut peer = Command::new(venv_python())
        .arg(root.join("tests/peer/orbsift_peer.py"))
        .args([
            "--data",
            &root.join("tests/data").to_string_lossy(),
            "--timeout",
            "60",
        ])
        .env("ROS_DOMAIN_ID", domain)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the Python peer");
    let deadline = Instant::now() + Duration::from_secs(240);
    while peer.try_wait().expect("poll the peer").is_none() {
        if Instant::now() > deadline {
            let _ = peer.kill();
            panic!("the peer did not finish within 240 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let output = peer.wait_with_output().expect("peer output");
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("peer printed no JSON ({e}): {text}"))
}

#[test]
fn a_cyclonedds_peer_gets_features_matches_and_diagnostics() {
    let domain = (150 + std::process::id() % 80).to_string();
    let _node = Running(
        Command::new(env!("CARGO_BIN_EXE_orbsift_node"))
            .args([
                "--ros-args",
                "-p",
                "backend:=cpu",
                "-p",
                "matching.mode:=temporal",
            ])
            .env("ROS_DOMAIN_ID", &domain)
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("start orbsift_node"),
    );
    let report = run_peer(&domain);
    assert_eq!(report["node_found"], true, "{report}");

    let features = report["features"].as_array().unwrap();
    let by_sec = |sec: u64| features.iter().find(|f| f["sec"] == sec);
    for sec in report["good_secs"].as_array().unwrap() {
        let f = by_sec(sec.as_u64().unwrap()).unwrap_or_else(|| panic!("no Features for {sec}"));
        assert_eq!(f["frame_id"], "peer_camera");
        assert_eq!(f["nanosec"], 0);
        assert_eq!(f["algorithm"], "orb");
        assert_eq!(f["descriptor_type"], "orb256");
        assert_eq!(f["descriptor_size"], 32);
        let n = f["keypoints"].as_u64().unwrap();
        assert!(n > 50, "too few keypoints on a real image: {f}");
        assert_eq!(f["descriptor_bytes"].as_u64().unwrap(), n * 32, "{f}");
        assert!(f["array_lengths"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l.as_u64() == Some(n)));
        assert_eq!(f["in_image"], true, "{f}");
    }
    let sizes = |sec: u64| {
        let f = by_sec(sec).unwrap();
        (f["width"].as_u64().unwrap(), f["height"].as_u64().unwrap())
    };
    assert_eq!(sizes(1), (640, 480), "basketball is 640x480");
    assert_eq!(sizes(3), (584, 388), "rubberwhale is 584x388");

    for case in report["bad_cases"].as_object().unwrap().values() {
        assert!(
            by_sec(case.as_u64().unwrap()).is_none(),
            "Features for a bad frame {case}"
        );
    }

    let matches = report["matches"].as_array().unwrap();
    assert!(!matches.is_empty());
    for m in matches {
        assert_eq!(m["mode"], "temporal");
        assert_eq!(m["lengths_agree"], true, "{m}");
        assert_eq!(m["indices_in_range"], true, "{m}");
    }

    let shift = &report["shift"];
    let (total, consistent) = (
        shift["matches"].as_f64().unwrap(),
        shift["consistent"].as_f64().unwrap(),
    );
    assert!(
        total >= 50.0,
        "too few matches on the shifted pair: {shift}"
    );
    assert!(
        consistent / total >= 0.8,
        "matches disagree with the known motion: {shift}"
    );

    // Matches drawn side by side while the peer subscribes to debug_image.
    let (w, h) = (
        shift["width"].as_u64().unwrap(),
        shift["height"].as_u64().unwrap(),
    );
    let debug = &report["debug_image"];
    assert_eq!(debug[0].as_u64(), Some(2 * w), "{debug}");
    assert_eq!(debug[1].as_u64(), Some(h), "{debug}");
    assert_eq!(debug[2], "rgb8");
    assert_eq!(debug[3].as_u64(), Some(2 * w * h * 3), "{debug}");

    let bad = report["bad_cases"].as_object().unwrap().len().to_string();
    assert_eq!(
        report["diagnostics"]["frames_rejected"],
        bad.as_str(),
        "{report}"
    );
    assert_eq!(report["diagnostics"]["backend"], "cpu");
}
