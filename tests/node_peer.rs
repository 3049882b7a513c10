//! orbsift_node against a ROS 2 peer that is not this code: Eclipse Cyclone DDS
//! from Python (tests/peer/orbsift_peer.py) publishes real images and malformed
//! frames and reports what the node answered; this test judges the report.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::node_report::check_exchange;
use common::ros::{built_cpu_node, Running};

fn run_peer(domain: &str) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut peer = Command::new(common::peer::python())
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
        built_cpu_node("temporal", &domain)
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("start orbsift_node"),
    );
    check_exchange(&run_peer(&domain));
}
