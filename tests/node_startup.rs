//! orbsift_node as a process: start-up errors name the culprit and exit non-zero;
//! SIGTERM (what `ros2 launch` sends) ends it cleanly.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn node(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_orbsift_node"));
    command
        .args(args)
        .env("ROS_DOMAIN_ID", (20 + std::process::id() % 40).to_string());
    command
}

fn failed_start(args: &[&str]) -> String {
    let Output { status, stderr, .. } = node(args).output().expect("run orbsift_node");
    assert!(!status.success(), "{args:?} started");
    String::from_utf8_lossy(&stderr).into_owned()
}

#[test]
fn bad_parameters_and_arguments_stop_the_start_with_the_name() {
    for (args, named) in [
        (
            &["--ros-args", "-p", "orb.n_feature:=5"][..],
            "orb.n_feature",
        ),
        (
            &["--ros-args", "-p", "matching.mode:=sideways"],
            "matching.mode",
        ),
        (
            &[
                "--ros-args",
                "-p",
                "input.source:=camera",
                "-p",
                "input.device:=",
            ],
            "input.device",
        ),
        (
            &["--ros-args", "--params-file", "/nonexistent.yaml"],
            "/nonexistent.yaml",
        ),
        (&["--frobnicate"], "--frobnicate"),
    ] {
        let stderr = failed_start(args);
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
    let stderr = node(&["--ros-args", "-p", "backend:=cpu"])
        .env("ROS_DOMAIN_ID", "999")
        .output()
        .expect("run orbsift_node")
        .stderr;
    assert!(String::from_utf8_lossy(&stderr).contains("ROS_DOMAIN_ID"));
}

#[test]
fn sigterm_ends_the_node_cleanly() {
    let mut child = node(&["--ros-args", "-p", "backend:=cpu"])
        .spawn()
        .expect("start");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the node stopped by itself"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the node ignored SIGTERM for 20 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
}
