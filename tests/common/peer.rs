//! The Python test peers (`tests/peer/*.py`, OpenCV) run from the project's venv.
//!
//! The scripts only run OpenCV and print JSON; every assertion is made in Rust.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

// `orb_features.py` writes keypoints in the form `orbsift extract` does.
use orbsift::report::KeypointRecord;
use orbsift::{DescriptorKind, Descriptors, GrayImage, Keypoints};
use serde::de::DeserializeOwned;
use serde::Deserialize;

pub fn project_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A file of `tests/data`.
pub fn test_data(name: &str) -> PathBuf {
    project_dir().join("tests/data").join(name)
}

/// `relative`, a file of the project that a setup script makes; panics (the test fails,
/// it never skips) with `how` to make it when it is missing.
pub fn made_by_setup(relative: &str, how: &str) -> PathBuf {
    let path = project_dir().join(relative);
    assert!(path.is_file(), "{} is missing: {how}", path.display());
    path
}

/// The venv's Python.
pub fn python() -> PathBuf {
    made_by_setup(
        ".venv/bin/python",
        "run scripts/setup.sh first (it creates .venv with the OpenCV test peer)",
    )
}

/// Runs `tests/peer/<script>` with `args` and parses the JSON it prints.
pub fn run<T: DeserializeOwned>(script: &str, args: &[&OsStr]) -> T {
    let path = project_dir().join("tests/peer").join(script);
    let output = Command::new(python())
        .arg(&path)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", path.display()));
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{script} printed JSON that does not parse: {e}"))
}

/// Saves `image` as PGM so OpenCV reads exactly orbsift's grey pixels.
pub fn write_pgm(dir: &Path, name: &str, image: &GrayImage) -> PathBuf {
    let path = dir.join(format!("{name}.pgm"));
    image
        .save(&path)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// OpenCV's ORB output for one image (`orb_features.py`).
#[derive(Debug, Deserialize)]
pub struct PeerFeatures {
    pub width: usize,
    pub height: usize,
    pub keypoints: Vec<KeypointRecord>,
    pub descriptors: Vec<String>,
}

impl PeerFeatures {
    pub fn keypoints(&self) -> Keypoints {
        let mut out = Keypoints::with_capacity(self.keypoints.len());
        for k in &self.keypoints {
            out.push(k.x, k.y, k.size, k.angle, k.response, k.octave);
        }
        out
    }

    pub fn descriptors(&self) -> Descriptors {
        let mut out = Descriptors::new(DescriptorKind::Orb256);
        for hex in &self.descriptors {
            assert_eq!(hex.len(), 64, "an ORB descriptor is 32 bytes: {hex}");
            out.data.extend((0..hex.len()).step_by(2).map(|i| {
                u8::from_str_radix(&hex[i..i + 2], 16)
                    .unwrap_or_else(|e| panic!("bad hex descriptor {hex}: {e}"))
            }));
        }
        out
    }
}

/// OpenCV ORB (`n_features`) on each image; `specs` are `IMAGE` or `IMAGE:MASK` paths.
pub fn opencv_orb(n_features: u32, specs: &[String]) -> Vec<PeerFeatures> {
    let n = n_features.to_string();
    let mut args: Vec<&OsStr> = vec![OsStr::new(&n)];
    args.extend(specs.iter().map(OsStr::new));
    run("orb_features.py", &args)
}
