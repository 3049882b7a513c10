//! `ros2 launch orbsift orbsift.launch.py` for real: the colcon-installed package (r2r node),
//! started by launch and launch_ros (../shared/peers/ros2-launch, run as `ros2 launch` runs
//! them), seen and fed by rclpy (tests/peer/launch_probe.py), then stopped with SIGINT.
//!
//! Needs a shell with `.ros/setup.bash` and the workspace's `install/local_setup.bash`
//! sourced and launch on PYTHONPATH: scripts/test-ros.sh sets that up and runs these.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::Value;

const FRAMES: usize = 4;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A launch process that is interrupted (SIGINT) if a test fails before doing so.
struct Launch {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Launch {
    fn start(domain: u32, arguments: &[&str]) -> Launch {
        let launcher = root().join("../shared/peers/ros2-launch/ros2_launch.py");
        assert!(launcher.exists(), "{} is missing", launcher.display());
        let installed = std::env::var("AMENT_PREFIX_PATH").unwrap_or_default();
        assert!(
            std::env::split_paths(&installed).any(|p| p.join("share/orbsift/launch").is_dir()),
            "no installed orbsift package on AMENT_PREFIX_PATH: run scripts/test-ros.sh"
        );
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("launch.log");
        let out = std::fs::File::create(&log).unwrap();
        let mut command = Command::new("python3");
        command
            .arg(&launcher)
            .args(["orbsift", "orbsift.launch.py"])
            .args(arguments)
            .env("ROS_DOMAIN_ID", domain.to_string())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        // A shell starts background jobs with SIGINT ignored, and launch then never sees
        // the test's Ctrl-C: give it the default disposition, as a terminal would.
        // SAFETY: only signal(2), which is async-signal-safe, runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            })
        };
        let child = command.spawn().expect("start ros2_launch.py");
        Launch {
            child,
            log,
            _dir: dir,
        }
    }

    fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGINT, as Ctrl-C in `ros2 launch` sends; the exit status and what launch printed.
    fn interrupt(mut self) -> (Option<i32>, String) {
        interrupt(self.child.id());
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                Instant::now() < deadline,
                "launch still running 20 s after SIGINT:\n{}",
                self.output()
            );
            sleep(Duration::from_millis(50));
        };
        let output = self.output();
        (status, output)
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            interrupt(self.child.id());
            sleep(Duration::from_secs(2));
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn interrupt(pid: u32) {
    // SAFETY: kill(2) with a pid this test spawned and a valid signal number.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid launch reports for orbsift_node ("process started with pid [N]").
fn node_pid(output: &str) -> Option<i32> {
    let line = output
        .lines()
        .find(|l| l.contains("orbsift_node") && l.contains("process started with pid"))?;
    line.rsplit('[')
        .next()?
        .trim_end_matches(']')
        .trim()
        .parse()
        .ok()
}

/// rclpy's report (tests/peer/launch_probe.py) on the launched node.
fn probe(domain: u32, namespace: &str, mode: &str, topics: &str, params: &str) -> Value {
    let output = Command::new("python3")
        .arg(root().join("tests/peer/launch_probe.py"))
        .args([namespace, mode, topics])
        .arg(root().join(params))
        .arg(root().join("tests/data/box.pgm"))
        .arg(FRAMES.to_string())
        .env("ROS_DOMAIN_ID", domain.to_string())
        .output()
        .expect("run launch_probe.py");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "launch_probe.py failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("launch_probe.py printed no report ({e}): {stdout}"))
}

fn topics(report: &Value, key: &str) -> BTreeSet<(String, String)> {
    report[key]
        .as_object()
        .unwrap_or_else(|| panic!("no {key} in {report}"))
        .iter()
        .flat_map(|(topic, types)| {
            types
                .as_array()
                .unwrap()
                .iter()
                .map(move |t| (topic.clone(), t.as_str().unwrap().to_string()))
        })
        .collect()
}

fn pair(topic: &str, ty: &str) -> (String, String) {
    (topic.to_string(), ty.to_string())
}

/// Every value of the parameter file, read back through the node's parameter service.
fn assert_parameters_applied(report: &Value) {
    let expected = report["parameters_expected"].as_object().unwrap();
    let actual = report["parameters"].as_object().unwrap();
    assert!(!expected.is_empty());
    for (name, value) in expected {
        let got = &actual[name];
        let same = match (value.as_f64(), got.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => value == got,
        };
        assert!(same, "parameter {name}: file says {value}, node says {got}");
    }
}

/// One Features message per frame and input, with the frame's stamp, frame_id and size.
fn assert_features(report: &Value, frame_ids: &[&str]) {
    let sent: BTreeSet<i64> = report["sent_stamps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    assert_eq!(sent.len(), FRAMES);
    let features = report["features"].as_array().unwrap();
    assert_eq!(features.len(), FRAMES * frame_ids.len(), "{report}");
    let size = &report["image_size"];
    for f in features {
        assert!(
            sent.contains(&f["stamp"].as_i64().unwrap()),
            "unknown stamp: {f}"
        );
        assert!(frame_ids.contains(&f["frame_id"].as_str().unwrap()), "{f}");
        assert_eq!((&f["width"], &f["height"]), (&size[0], &size[1]));
        let keypoints = f["keypoints"].as_u64().unwrap();
        assert!(keypoints > 50, "too few keypoints on box.pgm: {f}");
        assert_eq!(
            f["descriptor_bytes"].as_u64().unwrap(),
            keypoints * f["descriptor_size"].as_u64().unwrap(),
            "{f}"
        );
    }
}

fn assert_matches(report: &Value, mode: &str, at_least: usize) {
    let matches = report["matches"].as_array().unwrap();
    assert!(
        matches.len() >= at_least,
        "{} {mode} matches: {report}",
        matches.len()
    );
    for m in matches {
        assert_eq!(m["mode"], mode);
        // The same picture every time: most keypoints find their twin.
        assert!(m["count"].as_u64().unwrap() > 50, "{m}");
    }
}

fn assert_clean_exit((status, output): (Option<i32>, String)) {
    assert_eq!(
        status,
        Some(0),
        "launch's exit status after SIGINT:\n{output}"
    );
    let pid = node_pid(&output).unwrap_or_else(|| panic!("no node pid in:\n{output}"));
    assert!(!alive(pid), "orbsift_node (pid {pid}) outlived launch");
    assert!(
        output.contains("orbsift_node-1]: process has finished cleanly"),
        "orbsift_node did not exit 0 on SIGINT:\n{output}"
    );
}

#[test]
#[ignore = "needs ROS 2 (scripts/setup-ros.sh) and the colcon-installed package: scripts/test-ros.sh"]
fn mono_launch_with_a_namespace_and_an_image_remap() {
    let domain = 60 + std::process::id() % 20;
    let launch = Launch::start(domain, &["namespace:=/front", "image:=/camera/image_raw"]);
    let report = probe(
        domain,
        "/front",
        "mono",
        "/camera/image_raw",
        "config/orb.yaml",
    );

    let publishers = topics(&report, "publishers");
    for expected in [
        pair("/front/features", "orbsift_msgs/msg/Features"),
        pair("/front/matches", "orbsift_msgs/msg/Matches"),
        pair("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray"),
    ] {
        assert!(
            publishers.contains(&expected),
            "{expected:?} not in {publishers:?}"
        );
    }
    let subscribers = topics(&report, "subscribers");
    assert!(
        subscribers.contains(&pair("/camera/image_raw", "sensor_msgs/msg/Image")),
        "the image remap is not applied: {subscribers:?}"
    );
    assert_parameters_applied(&report);
    assert_features(&report, &["camera"]);
    assert_matches(&report, "temporal", FRAMES - 1);
    assert_clean_exit(launch.interrupt());
}

#[test]
#[ignore = "needs ROS 2 (scripts/setup-ros.sh) and the colcon-installed package: scripts/test-ros.sh"]
fn stereo_launch() {
    let domain = 80 + std::process::id() % 20;
    let launch = Launch::start(domain, &["namespace:=/rig", "use_stereo:=true"]);
    let report = probe(
        domain,
        "/rig",
        "stereo",
        "/rig/left/image,/rig/right/image",
        "config/stereo.yaml",
    );

    let subscribers = topics(&report, "subscribers");
    for side in ["left", "right"] {
        let expected = pair(&format!("/rig/{side}/image"), "sensor_msgs/msg/Image");
        assert!(
            subscribers.contains(&expected),
            "{expected:?} not in {subscribers:?}"
        );
    }
    assert_parameters_applied(&report);
    assert_features(&report, &["left", "right"]);
    assert_matches(&report, "stereo", FRAMES);
    assert_clean_exit(launch.interrupt());
}
