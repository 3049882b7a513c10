//! Peak host memory of SIFT on the CPU backend, measured: the `orbsift` CLI extracts the
//! features of a real photo upscaled to the frame size in a child process, whose peak
//! resident set (`ru_maxrss` of `wait4`) must stay within the bound docs/memory.md gives
//! ([`SiftExtractor::scale_space_bytes`] plus the input and per-keypoint terms) and, at
//! the largest frame `max_image_pixels` allows, under 4 GB.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use orbsift::config::SiftConfig;
use orbsift::cpu::sift::SiftExtractor;
use orbsift::image::{GrayImage, DEFAULT_MAX_PIXELS};
use tempfile::TempDir;

/// What the CLI's JSON report holds per keypoint beside the features: a 24-byte record
/// and the descriptor as a 256-character hex `String`.
const REPORT_BYTES_PER_KEYPOINT: usize = 24 + 24 + 256;

const FOUR_GB: usize = 4_000_000_000;

/// `tests/data/graf1.png` resized (bilinear) to `width` x `height`, written as a PGM.
fn upscaled_photo(dir: &Path, width: usize, height: usize) -> PathBuf {
    let photo =
        GrayImage::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graf1.png"))
            .unwrap();
    let source = image::GrayImage::from_raw(
        photo.width() as u32,
        photo.height() as u32,
        photo.data().to_vec(),
    )
    .unwrap();
    let resized = image::imageops::resize(
        &source,
        width as u32,
        height as u32,
        image::imageops::FilterType::Triangle,
    );
    let path = dir.join(format!("graf_{width}x{height}.pgm"));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(file, "P5\n{width} {height}\n255\n").unwrap();
    file.write_all(resized.as_raw()).unwrap();
    file.flush().unwrap();
    path
}

/// Peak resident bytes of `orbsift extract --algo sift --backend cpu` on `image`, and
/// the number of keypoints it wrote.
#[expect(
    clippy::zombie_processes,
    reason = "wait4 reaps the child: Child::wait would not give its resource usage"
)]
fn extract_peak(image: &Path, upscale: bool) -> (usize, usize) {
    let out = image.with_extension(format!("upscale_{upscale}.json"));
    let child = Command::new(env!("CARGO_BIN_EXE_orbsift"))
        .args(["extract", "--algo", "sift", "--backend", "cpu", "--set"])
        .arg(format!("sift.upscale={upscale}"))
        .arg("--out")
        .arg(&out)
        .arg(image)
        .env_remove("RUST_LOG")
        .spawn()
        .expect("the orbsift binary runs");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `child` is our unwaited child; status and usage are valid for writes.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "orbsift extract {} failed: status {status:#x}",
        image.display()
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let keypoints = report["keypoints"].as_array().unwrap().len();
    // Linux reports ru_maxrss in KiB.
    (usage.ru_maxrss as usize * 1024, keypoints)
}

/// docs/memory.md's bound for the CLI: the process as it is on a tiny frame, the scale
/// space, the input decoded and held (twice its pixels) and every keypoint with its
/// report.
fn bound(dir: &Path, width: usize, height: usize, upscale: bool, keypoints: usize) -> usize {
    let tiny = upscaled_photo(dir, 64, 48);
    let (process, _) = extract_peak(&tiny, upscale);
    let sift = SiftExtractor::new(SiftConfig {
        upscale,
        ..SiftConfig::default()
    })
    .unwrap();
    let per_keypoint =
        SiftExtractor::KEYPOINT_BYTES + SiftExtractor::CANDIDATE_BYTES + REPORT_BYTES_PER_KEYPOINT;
    process + sift.scale_space_bytes(width, height) + 2 * width * height + keypoints * per_keypoint
}

fn check(width: usize, height: usize, upscale: bool) -> usize {
    let dir = TempDir::new().unwrap();
    let image = upscaled_photo(dir.path(), width, height);
    let (peak, keypoints) = extract_peak(&image, upscale);
    let bound = bound(dir.path(), width, height, upscale, keypoints);
    let scale_space = SiftExtractor::new(SiftConfig {
        upscale,
        ..SiftConfig::default()
    })
    .unwrap()
    .scale_space_bytes(width, height);
    let mb = |b: usize| b as f64 / 1e6;
    eprintln!(
        "{width}x{height} upscale={upscale}: peak {:.0} MB, bound {:.0} MB (scale space \
         {:.0} MB), {keypoints} keypoints",
        mb(peak),
        mb(bound),
        mb(scale_space)
    );
    assert!(
        keypoints > 100,
        "{keypoints} keypoints: not a real photo's features"
    );
    assert!(
        peak <= bound,
        "peak {peak} B over the documented bound {bound} B"
    );
    // The bound describes where the memory goes, rather than allowing anything.
    assert!(
        peak >= scale_space / 2,
        "peak {peak} B: the scale space bound {scale_space} B is not what is held"
    );
    peak
}

#[test]
fn sift_at_1080p_stays_within_the_documented_bound() {
    check(1920, 1080, true);
    check(1920, 1080, false);
}

#[test]
fn sift_in_several_bands_stays_within_the_documented_bound() {
    // Upscaled, 6000 columns: bands of 2796 rows of 4000, so two bands and candidates
    // finished outside theirs.
    check(3000, 2000, true);
}

#[test]
#[ignore = "about 2 minutes on 2 cores: runs in scripts/test.sh"]
fn sift_at_the_largest_frame_stays_under_4_gb() {
    let side = (DEFAULT_MAX_PIXELS as f64).sqrt() as usize;
    assert_eq!(side * side, DEFAULT_MAX_PIXELS as usize);
    for upscale in [true, false] {
        let peak = check(side, side, upscale);
        assert!(
            peak <= FOUR_GB,
            "{side}x{side} upscale={upscale}: peak {peak} B"
        );
    }
}
