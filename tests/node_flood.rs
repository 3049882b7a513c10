//! orbsift_node under a flood of camera frames from another DDS stack (Eclipse Cyclone
//! DDS, tests/peer/flood.py): its memory stays bounded and flat, the latest frames keep
//! being processed, its log stays quiet, it starts while the flood is already running,
//! and SIGTERM ends it with status 0 within 2 s.

mod common;

use common::ros::{built_cpu_node, Running};

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The bound on the node's resident memory under any load.
const MAX_RSS_MB: f64 = 400.0;
/// How much the resident memory may still grow between the first and the last third of
/// a flood once the node has warmed up: allocator noise, not a leak.
const MAX_GROWTH_MB: f64 = 40.0;
/// From the first Features on, how long the stack's caches take to fill to their byte
/// budgets (vendor/README.md): its memory rises by ~15 MB over the first two seconds of a
/// 1080p flood, then stays flat. Counted in the peak, not in the growth.
const WARM_UP: Duration = Duration::from_secs(5);
/// How long SIGTERM may take to end the node.
const STOP_WITHIN: Duration = Duration::from_secs(2);

/// One flood at a time: two would share the machine's two cores.
static MACHINE: Mutex<()> = Mutex::new(());

fn domain(offset: u32) -> String {
    (100 + (std::process::id() + offset) % 100).to_string()
}

/// The node on `domain`, logging into `log`.
fn start_node(domain: &str, log: &Path) -> Running {
    Running(
        built_cpu_node("none", domain)
            .stdout(Stdio::null())
            .stderr(File::create(log).expect("create the node's log"))
            .spawn()
            .expect("start orbsift_node"),
    )
}

/// What the flood peer reported last: frames sent, Features received.
#[derive(Clone, Copy, Default, Debug)]
struct Progress {
    sent: u64,
    features: u64,
}

/// Floods `domain` with `width` x `height` bgr8 frames at `rate` (0: as fast as it can).
fn start_flood(
    domain: &str,
    (width, height): (u32, u32),
    rate: f64,
) -> (Running, Arc<Mutex<Progress>>) {
    let mut child = Command::new(common::peer::python())
        .arg(common::peer::project_dir().join("tests/peer/flood.py"))
        .args([
            "--width",
            &width.to_string(),
            "--height",
            &height.to_string(),
        ])
        .args(["--rate", &rate.to_string(), "--seconds", "600"])
        .env("ROS_DOMAIN_ID", domain)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the flood peer");
    let progress = Arc::new(Mutex::new(Progress::default()));
    let lines = BufReader::new(child.stdout.take().expect("flood stdout"));
    let shared = progress.clone();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(|line| line.ok()) {
            let report: serde_json::Value = match serde_json::from_str(&line) {
                Ok(report) => report,
                Err(_) => continue,
            };
            let count = |key: &str| report[key].as_u64().unwrap_or(0);
            *shared.lock().unwrap() = Progress {
                sent: count("sent"),
                features: count("features"),
            };
        }
    });
    (Running(child), progress)
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("node status");
    let kb: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kb / 1024.0
}

/// Sends SIGTERM and returns the exit status and how long the node took.
fn terminate(node: &mut Running) -> (Option<ExitStatus>, Duration) {
    let sent = Instant::now();
    // SAFETY: kill(2) on a child this test started and has not reaped.
    let signalled = unsafe { libc::kill(node.0.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(signalled, 0, "cannot signal the node");
    let status = node.wait_timeout(STOP_WITHIN + Duration::from_secs(3));
    (status, sent.elapsed())
}

fn wait_for_features(progress: &Mutex<Progress>, more_than: u64, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if progress.lock().unwrap().features > more_than {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// A flood of `size` frames at `rate` for `seconds`: memory bounded and flat, Features
/// still coming at the end, a quiet log, SIGTERM obeyed.
fn flood_case(offset: u32, size: (u32, u32), rate: f64, seconds: u64) {
    let domain = domain(offset);
    let log =
        std::env::temp_dir().join(format!("orbsift_flood_{}_{offset}.log", std::process::id()));
    let mut node = start_node(&domain, &log);
    let (_flood, progress) = start_flood(&domain, size, rate);
    assert!(
        wait_for_features(&progress, 0, Duration::from_secs(60)),
        "{size:?}: the node published no Features within 60 s of the flood; log: {}",
        log.display()
    );
    let sample_for = |duration: Duration| {
        let started = Instant::now();
        let mut samples = Vec::new();
        while started.elapsed() < duration {
            samples.push(rss_mb(node.0.id()));
            std::thread::sleep(Duration::from_millis(500));
        }
        samples
    };
    let warming = sample_for(WARM_UP);
    let samples = sample_for(Duration::from_secs(seconds));
    let before_end = *progress.lock().unwrap();
    assert!(
        wait_for_features(&progress, before_end.features, Duration::from_secs(10)),
        "{size:?}: the node stopped publishing Features under the flood ({before_end:?})"
    );
    let (status, took) = terminate(&mut node);
    let peak = warming.iter().chain(&samples).cloned().fold(0.0, f64::max);
    let third = samples.len() / 3;
    let first = samples[..third].iter().cloned().fold(0.0, f64::max);
    let last = samples[samples.len() - third..]
        .iter()
        .cloned()
        .fold(0.0, f64::max);
    let sent = progress.lock().unwrap().sent;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let log_lines = text.lines().count();
    eprintln!(
        "{size:?} at {rate} Hz for {WARM_UP:?} + {seconds} s: {sent} frames sent, RSS peak \
         {peak:.0} MB, after the warm-up first third {first:.0} MB, last third {last:.0} MB; \
         exit {status:?} in {took:?}; {log_lines} log lines"
    );
    assert!(peak <= MAX_RSS_MB, "{size:?}: RSS peaked at {peak:.0} MB");
    assert!(
        last - first <= MAX_GROWTH_MB,
        "{size:?}: RSS grew from {first:.0} MB to {last:.0} MB"
    );
    assert!(
        status.is_some_and(|s| s.success()) && took <= STOP_WITHIN,
        "{size:?}: SIGTERM under the flood: exit {status:?} after {took:?}"
    );
    // A summary line a second and start-up lines; a storm is hundreds.
    assert!(
        log_lines as u64 <= 2 * (WARM_UP.as_secs() + seconds) + 40,
        "{size:?}: {log_lines} log lines in {WARM_UP:?} + {seconds} s:\n{}",
        text.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
    let _ = std::fs::remove_file(log);
}

#[test]
fn a_flood_of_vga_frames_leaves_memory_flat_and_sigterm_obeyed() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    flood_case(0, (640, 480), 0.0, 30);
}

#[test]
fn a_flood_of_1080p_frames_at_100_hz_leaves_memory_flat_and_sigterm_obeyed() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    flood_case(1, (1920, 1080), 100.0, 30);
}

#[test]
fn the_node_starts_and_works_while_a_flood_is_already_running() {
    let _machine = MACHINE.lock().unwrap_or_else(|p| p.into_inner());
    let domain = domain(2);
    let (_flood, progress) = start_flood(&domain, (640, 480), 0.0);
    std::thread::sleep(Duration::from_secs(2));
    // Every start that finds a flood running must publish; twenty make a hang rare to miss.
    for start in 0..20 {
        let log = std::env::temp_dir().join(format!(
            "orbsift_flood_start_{}_{start}.log",
            std::process::id()
        ));
        let seen = progress.lock().unwrap().features;
        let mut node = start_node(&domain, &log);
        assert!(
            wait_for_features(&progress, seen, Duration::from_secs(60)),
            "start {start}: no Features within 60 s while flooded; log: {}",
            log.display()
        );
        let (status, took) = terminate(&mut node);
        assert!(
            status.is_some_and(|s| s.success()) && took <= STOP_WITHIN,
            "start {start}: SIGTERM under the flood: exit {status:?} after {took:?}"
        );
        let _ = std::fs::remove_file(log);
    }
}
