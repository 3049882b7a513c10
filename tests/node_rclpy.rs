//! orbsift_node against a real ROS 2 node: rclpy over Fast DDS (tests/peer/rclpy_peer.py,
//! ROS 2 Jazzy from scripts/setup-ros.sh). The node is the one these tests were built
//! with: the embedded DDS transport by default, the r2r (rcl) transport with
//! `--features r2r`. The peer reports what it saw; every judgement is made here.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::node_report::check_exchange;
use common::peer::{project_dir, test_data};
use common::ros::{domain, node_command, run_ros_peer, start_cpu_node, write_raw_frames, Running};

const FRAMES: [&str; 4] = [
    "basketball1.png",
    "basketball2.png",
    "rubberwhale1.png",
    "rubberwhale2.png",
];

/// Runs `rclpy_peer.py scenario` against the node `name` in `namespace` on `domain`.
fn rclpy_peer(scenario: &str, namespace: &str, name: &str, domain: &str) -> Value {
    let frames = tempfile::tempdir().expect("temporary folder");
    write_raw_frames(frames.path(), &FRAMES);
    let data = test_data("");
    let args: Vec<&OsStr> = vec![
        OsStr::new(scenario),
        OsStr::new("--frames"),
        frames.path().as_os_str(),
        OsStr::new("--data"),
        data.as_os_str(),
        OsStr::new("--namespace"),
        OsStr::new(namespace),
        OsStr::new("--node"),
        OsStr::new(name),
        OsStr::new("--timeout"),
        OsStr::new("60"),
    ];
    let report = run_ros_peer("rclpy_peer.py", &args, domain, Duration::from_secs(180));
    eprintln!("rclpy_peer.py {scenario}: {report}");
    assert_eq!(
        report["node_found"], true,
        "rclpy did not find the node: {report}"
    );
    report
}

#[test]
fn rclpy_gets_features_matches_and_diagnostics_and_sees_the_graph() {
    let domain = domain(0);
    let _node = start_cpu_node(
        &[
            "-r",
            "__ns:=/rclpy",
            "-r",
            "__node:=extractor",
            "-p",
            "matching.mode:=temporal",
        ],
        &domain,
    );
    let report = rclpy_peer("frames", "/rclpy", "extractor", &domain);
    check_exchange(&report);

    let graph = &report["graph"];
    assert!(
        graph["nodes"]
            .as_array()
            .unwrap()
            .contains(&json!(["extractor", "/rclpy"])),
        "rclpy does not see /rclpy/extractor: {graph}"
    );
    let published = [
        ("/rclpy/features", "orbsift_msgs/msg/Features"),
        ("/rclpy/matches", "orbsift_msgs/msg/Matches"),
        ("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray"),
        ("/rclpy/debug_image", "sensor_msgs/msg/Image"),
        ("/parameter_events", "rcl_interfaces/msg/ParameterEvent"),
    ];
    let subscribed = [("/rclpy/image", "sensor_msgs/msg/Image")];
    for (topic, type_name) in published.iter().chain(&subscribed) {
        assert_eq!(
            graph["topics"][topic],
            json!([type_name]),
            "{topic} in the graph: {graph}"
        );
    }
    for (topic, type_name) in published {
        assert_eq!(
            graph["node_publishes"][topic],
            json!([type_name]),
            "the node's publishers as rclpy sees them: {graph}"
        );
    }
    for (topic, type_name) in subscribed {
        assert_eq!(
            graph["node_subscribes"][topic],
            json!([type_name]),
            "the node's subscriptions as rclpy sees them: {graph}"
        );
    }
}

#[test]
fn stereo_pairs_from_rclpy_are_matched_consistently_with_the_disparity() {
    let domain = domain(1);
    let params = project_dir().join("config/stereo.yaml");
    let _node = start_cpu_node(
        &[
            "-r",
            "__ns:=/rig",
            "--params-file",
            params.to_str().unwrap(),
        ],
        &domain,
    );
    let m = &rclpy_peer("stereo", "/rig", "orbsift", &domain)["matches"];
    assert_eq!(m["mode"], "stereo", "{m}");
    assert_eq!(m["frame_id"], "left");
    assert_eq!(m["train_frame_id"], "right");
    assert_eq!(m["sec"], m["train_sec"]);
    assert_eq!(m["train_nanosec"], 2_000_000);
    assert_eq!(m["pair_features"], true, "the pair's Features: {m}");
    let count = m["count"].as_f64().unwrap();
    assert!(count >= 100.0, "{m}");
    assert!(
        m["consistent"].as_f64().unwrap() / count >= 0.8,
        "matches disagree with the disparity: {m}"
    );
}

#[test]
fn rclpy_parameter_client_lists_gets_describes_and_sets_parameters() {
    let domain = domain(2);
    let _node = start_cpu_node(&["-p", "orb.n_features:=1000"], &domain);
    let report = rclpy_peer("parameters", "/", "orbsift", &domain);

    let names = report["list"]["names"].as_array().unwrap();
    for name in [
        "algorithm",
        "backend",
        "orb.n_features",
        "orb.scale_factor",
        "matching.ratio",
        "input.transport",
    ] {
        assert!(names.contains(&json!(name)), "{name} not listed: {names:?}");
    }
    let got = &report["get"];
    assert_eq!(got["backend"], "cpu");
    assert_eq!(got["algorithm"], "orb");
    assert_eq!(got["orb.n_features"], 1000);
    assert!(got["orb.scale_factor"].is_f64(), "{got}");
    // rcl_interfaces/msg/ParameterType: 2 integer, 3 double, 4 string.
    let types = &report["types"];
    assert_eq!(types["orb.n_features"], 2);
    assert_eq!(types["orb.scale_factor"], 3);
    assert_eq!(types["algorithm"], 4);

    let described = &report["describe"];
    for restart_only in ["algorithm", "backend"] {
        let d = &described[restart_only];
        assert_eq!(d["read_only"], true, "{restart_only}: {d}");
        assert!(
            d["additional_constraints"]
                .as_str()
                .unwrap()
                .contains("restart"),
            "{d}"
        );
    }
    let n_features = &described["orb.n_features"];
    assert_eq!(n_features["read_only"], false);
    assert_eq!(n_features["type"], 2);
    assert_eq!(n_features["integer_range"], json!([[1, 1_000_000]]));
    assert_eq!(
        described["orb.scale_factor"]["floating_point_range"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "{described}"
    );
    assert_eq!(described["matching.ratio"]["read_only"], false);

    // orb.n_features applies from the next frame.
    assert_eq!(report["set_n_features"]["successful"], true, "{report}");
    let keypoints = &report["keypoints"];
    let (before, after) = (
        keypoints[0].as_u64().expect("Features before the change"),
        keypoints[1].as_u64().expect("Features after the change"),
    );
    assert!(before > 150, "{keypoints}");
    assert!((50..=150).contains(&after), "{keypoints}");

    for (case, result) in report["refused"].as_object().unwrap() {
        assert_eq!(result["successful"], false, "{case}: {result}");
        let reason = result["reason"].as_str().unwrap();
        assert!(!reason.is_empty(), "{case} refused without a reason");
        if case.starts_with("restart_only") {
            assert!(reason.contains("restart"), "{case}: {reason}");
        }
    }
    let mut kept = got.clone();
    kept["orb.n_features"] = json!(150);
    assert_eq!(
        report["after_refusals"], kept,
        "a refused change altered a value"
    );
    let still = report["keypoints_after_refusals"].as_u64().unwrap();
    assert!(still <= 150, "{still} keypoints after the refusals");

    assert_eq!(
        report["events"],
        json!([{"changed": {"orb.n_features": 150}, "new": [], "deleted": []}]),
        "/parameter_events: one event for the accepted change only"
    );
}

#[test]
fn every_output_reaches_default_and_sensor_data_subscribers() {
    let domain = domain(3);
    let _node = start_cpu_node(&["-p", "matching.mode:=temporal"], &domain);
    let report = rclpy_peer("qos", "/", "orbsift", &domain);
    let answered = report["frames_answered"].as_array().unwrap();
    assert_eq!(answered.len(), 6, "frames the node answered: {report}");
    let received = &report["received"];
    eprintln!(
        "offered QoS {}; stamps received per subscriber profile {received}",
        report["offered"]
    );
    for topic in ["features", "matches", "debug_image", "/diagnostics"] {
        assert_eq!(
            report["offered"][topic],
            json!(["RELIABLE"]),
            "{topic} is offered reliable to default subscribers"
        );
    }
    // Matches pair each frame with the one before.
    let matched = json!(answered[1..]);
    for profile in ["default", "sensor_data"] {
        assert_eq!(
            received["features"][profile],
            json!(answered),
            "{profile}: {received}"
        );
        assert_eq!(
            received["matches"][profile], matched,
            "{profile}: {received}"
        );
        assert!(
            received["/diagnostics"][profile].as_u64().unwrap() >= 1,
            "{profile}: {received}"
        );
    }
    assert_eq!(
        received["debug_image"]["default"],
        json!(answered),
        "a default (reliable) subscriber gets every debug image: {received}"
    );
    assert!(
        !received["debug_image"]["sensor_data"]
            .as_array()
            .unwrap()
            .is_empty(),
        "a sensor-data subscriber gets debug images: {received}"
    );
}

#[test]
fn compressed_jpeg_and_png_from_rclpy_become_features() {
    let domain = domain(4);
    let _node = start_cpu_node(&["-p", "input.transport:=compressed"], &domain);
    let report = rclpy_peer("compressed", "/", "orbsift", &domain);
    let jpeg = image::open(test_data("leuvenA.jpg")).unwrap();
    for (case, (width, height)) in [("jpeg", (jpeg.width(), jpeg.height())), ("png", (640, 480))] {
        let f = &report["good"][case];
        assert_eq!(f["width"], width, "{case}: {f}");
        assert_eq!(f["height"], height, "{case}: {f}");
        assert_eq!(f["frame_id"], "peer_camera");
        let n = f["keypoints"].as_u64().unwrap();
        assert!(n > 50, "{case}: {f}");
        assert_eq!(f["descriptor_bytes"].as_u64(), Some(n * 32), "{case}: {f}");
    }
    for (case, answered) in report["bad"].as_object().unwrap() {
        assert_eq!(answered, false, "Features for the {case} frame");
    }
    for (case, answered) in report["answered_after_bad"].as_object().unwrap() {
        assert_eq!(answered, true, "no answer to the good frame after {case}");
    }
    let diagnostics = &report["diagnostics"];
    assert_eq!(diagnostics["frames_rejected"], "2", "{diagnostics}");
    assert!(
        !diagnostics["last_rejection"].as_str().unwrap().is_empty(),
        "{diagnostics}"
    );
}

/// Starts the node and returns once it logged its start and had time to spin.
fn started_node(domain: &str) -> Running {
    let mut node = Running(
        node_command(&["--ros-args", "-p", "backend:=cpu"], domain)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped())
            .spawn()
            .expect("start orbsift_node"),
    );
    let (started, ready) = mpsc::channel();
    let stderr = node.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("/orbsift: orb on") {
                let _ = started.send(());
            }
        }
    });
    ready
        .recv_timeout(Duration::from_secs(30))
        .expect("the node did not log its start within 30 s");
    std::thread::sleep(Duration::from_secs(1));
    assert!(node.0.try_wait().unwrap().is_none(), "the node stopped");
    node
}

#[test]
fn sigint_and_sigterm_end_the_node_with_status_0_within_a_second() {
    let domain = domain(5);
    let transport = common::ros::node_under_test().1;
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let mut node = started_node(&domain);
        let sent = Instant::now();
        // SAFETY: kill(2) on our own child's pid; no memory is shared.
        assert_eq!(unsafe { libc::kill(node.0.id() as i32, signal) }, 0);
        let status = node
            .wait_timeout(Duration::from_secs(1))
            .unwrap_or_else(|| panic!("the {transport} node still runs 1 s after {name}"));
        eprintln!(
            "{transport} node: {name} → {status} in {:?}",
            sent.elapsed()
        );
        assert!(status.success(), "{name}: {status}");
    }
}
