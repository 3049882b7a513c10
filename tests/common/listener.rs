//! An independent subscriber to what the node publishes, listening to `features`,
//! `matches` and `/diagnostics` from before the node starts until it is told to stop:
//! Cyclone DDS from Python (tests/peer/result_listener.py) or a real ROS 2 node,
//! rclpy over Fast DDS (tests/peer/rclpy_listener.py).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStderr, Command, Stdio};

use serde::Deserialize;

use super::{peer, ros};

/// Which DDS listens.
#[derive(Clone, Copy, Debug)]
pub enum Peer {
    CycloneDds,
    Rclpy,
}

/// One Features message as the listener summarises it.
#[derive(Debug, Deserialize)]
pub struct HeardFeatures {
    pub stamp: (i32, u32),
    pub frame_id: String,
    pub width: u32,
    pub height: u32,
    pub keypoints: usize,
    /// With `full` only.
    #[serde(default)]
    pub x: Vec<f32>,
    #[serde(default)]
    pub descriptors: String,
}

/// One Matches message as the listener summarises it.
#[derive(Debug, Deserialize)]
pub struct HeardMatches {
    pub stamp: (i32, u32),
    pub frame_id: String,
    pub train_stamp: (i32, u32),
    pub train_frame_id: String,
    pub mode: String,
    pub query_idx: Vec<u32>,
    pub train_idx: Vec<u32>,
}

/// Everything the listener heard, in the order it arrived.
#[derive(Debug, Deserialize)]
pub struct Listened {
    pub features: Vec<HeardFeatures>,
    pub matches: Vec<HeardMatches>,
    /// The last diagnostics report, as key → value.
    pub diagnostics: Option<HashMap<String, String>>,
}

/// The running listener, its readers created.
pub struct ResultListener {
    process: Child,
    log: BufReader<ChildStderr>,
}

impl ResultListener {
    /// Starts `listener` on `domain` and returns once its readers exist; `full` asks
    /// for every keypoint's x and descriptor.
    pub fn start(listener: Peer, domain: u16, full: bool) -> Self {
        let full = if full { &["--full"][..] } else { &[] };
        let mut command = match listener {
            Peer::CycloneDds => {
                let mut command = Command::new(peer::python());
                command
                    .arg(peer::project_dir().join("tests/peer/result_listener.py"))
                    .args(["--domain", &domain.to_string()]);
                command
            }
            Peer::Rclpy => {
                let script = peer::project_dir().join("tests/peer/rclpy_listener.py");
                let mut command =
                    ros::in_ros_environment(OsStr::new("python3"), &[script.as_os_str()]);
                ros::with_large_data_profile(&mut command).env("ROS_DOMAIN_ID", domain.to_string());
                command
            }
        };
        let mut process = command
            .args(full)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the result listener");
        let mut log = BufReader::new(process.stderr.take().unwrap());
        let mut ready = String::new();
        log.read_line(&mut ready).unwrap();
        assert_eq!(ready.trim(), "ready", "the result listener did not start");
        Self { process, log }
    }

    /// Stops listening and returns what was heard.
    pub fn finish(mut self) -> Listened {
        drop(self.process.stdin.take());
        let output = self.process.wait_with_output().unwrap();
        let mut complaints = String::new();
        self.log.read_to_string(&mut complaints).unwrap();
        assert!(
            output.status.success(),
            "result listener: {}\n{complaints}",
            output.status
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    pub fn kill(&mut self) {
        let _ = self.process.kill();
    }
}
