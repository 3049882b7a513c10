//! What a ROS 2 peer reports after the frame exchange of `orbsift_peer.py` (Cyclone
//! DDS) or `rclpy_peer.py frames` (rclpy), judged the same way for both peers.

use serde_json::Value;

/// A Features message for every good frame with its stamp, frame_id, size and
/// consistent arrays; none for a bad frame; temporal matches in range and ≥ 80 %
/// consistent with the known shift; the side-by-side debug image; every bad frame
/// counted in `/diagnostics`.
pub fn check_exchange(report: &Value) {
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
