//! orbsift's ORB against OpenCV's, on real images, with OpenCV's own test protocols.
//!
//! OpenCV runs in Python from the venv that `scripts/setup.sh` creates (tests/peer/*.py);
//! both sides see the same grey pixels (orbsift's conversion, handed over as PGM).
//! Each test prints its numbers beside OpenCV's (`cargo test --test orb_vs_opencv -- --nocapture`).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use common::invariance::{self, RotationScore, ScaleScore};
use common::orb::differing_bits;
use common::peer::{self, test_data, write_pgm};
use orbsift::cpu::matcher::BruteForceMatcher;
use orbsift::cpu::orb::OrbExtractor;
use orbsift::{Config, Extractor, Features, GrayImage, MatchConfig, Matcher, OrbConfig};
use serde::Deserialize;

/// OpenCV's invariance tests use `ORB::create()`, whose budget is 500 features.
const OPENCV_TEST_FEATURES: u32 = 500;
/// OpenCV's ORB thresholds (test_detectors_invariance.cpp, test_descriptors_invariance.cpp).
const MIN_ROTATION_MATCH_RATIO: f32 = 0.5;
const MIN_ROTATION_ANGLE_INLIERS: f32 = 0.76;
const MIN_SCALE_MATCH_RATIO: f32 = 0.08;
const MIN_SCALE_SIZE_INLIERS: f32 = 0.49;
const MIN_DESCRIPTOR_ROTATION_INLIERS: f32 = 0.99;
/// Image for the rotation tests (OpenCV uses tsukuba.png, 384x288, an indoor scene).
const ROTATION_IMAGE: &str = "rubberwhale1.png";
/// Image for the scale test (OpenCV uses the Oxford bikes img1; graf is of the same set).
const SCALE_IMAGE: &str = "graf1.png";
/// A match is correct when within this many pixels of the ground truth; also RANSAC's threshold.
const CORRECT_MATCH_PX: f32 = 3.0;

fn open(path: &Path) -> GrayImage {
    GrayImage::open(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn extractor(config: &OrbConfig) -> OrbExtractor {
    OrbExtractor::new(config.clone()).expect("a valid ORB config")
}

fn ours(config: &OrbConfig, image: &GrayImage) -> Features {
    extractor(config)
        .extract(image)
        .expect("extraction succeeds on a real image")
}

/// Our features whose keypoints fall inside `mask`. Our extractor takes no mask, so
/// keypoints outside it still take part of the budget (OpenCV masks before selecting).
fn ours_in_mask(config: &OrbConfig, image: &Path, mask: &Path) -> Features {
    let features = ours(config, &open(image));
    let inside = invariance::inside_mask(&features.keypoints, &open(mask));
    invariance::subset(&features, &inside)
}

fn opencv_test_config() -> OrbConfig {
    OrbConfig {
        n_features: OPENCV_TEST_FEATURES,
        ..OrbConfig::default()
    }
}

/// The homography `H1to3p.xml` (OpenCV storage: a 3x3 row-major `<data>`).
fn graf_ground_truth() -> [f64; 9] {
    let path = test_data("H1to3p.xml");
    let text = std::fs::read_to_string(&path).expect("H1to3p.xml is readable");
    let data = text
        .split_once("<data>")
        .and_then(|(_, rest)| rest.split_once("</data>"))
        .expect("H1to3p.xml has a <data> element")
        .0;
    let values: Vec<f64> = data
        .split_whitespace()
        .map(|v| v.parse().expect("H1to3p.xml holds numbers"))
        .collect();
    values.try_into().expect("H1to3p.xml holds 9 numbers")
}

/// `orb_matches.py`'s output: OpenCV's matched point pairs `[xa, ya, xb, yb]`.
#[derive(Deserialize)]
struct OpencvMatches {
    keypoints_a: usize,
    keypoints_b: usize,
    pairs: Vec<[f32; 4]>,
}

/// RANSAC inliers (`cv2.findHomography`, 3 px) that land within 3 px of the ground truth.
fn correct_matches(pairs: &[[f32; 4]], inliers: &[bool], truth: &[f64; 9]) -> usize {
    assert_eq!(pairs.len(), inliers.len(), "one RANSAC flag per pair");
    pairs
        .iter()
        .zip(inliers)
        .filter(|(p, &inlier)| {
            let (x, y) = invariance::project(truth, (p[0], p[1]));
            inlier && (x - p[2]).hypot(y - p[3]) <= CORRECT_MATCH_PX
        })
        .count()
}

#[test]
fn graf_1_to_3_has_at_least_as_many_correct_matches_as_opencv() {
    let config = Config::default();
    let dir = tempfile::tempdir().unwrap();
    let a = open(&test_data("graf1.png"));
    let b = open(&test_data("graf3.png"));
    let (a_pgm, b_pgm) = (
        write_pgm(dir.path(), "a", &a),
        write_pgm(dir.path(), "b", &b),
    );

    let (fa, fb) = (ours(&config.orb, &a), ours(&config.orb, &b));
    let matches = BruteForceMatcher::new(config.matching.clone())
        .match_features(&fa, &fb)
        .expect("ORB descriptors match");
    let (ka, kb) = (&fa.keypoints, &fb.keypoints);
    let our_pairs: Vec<[f32; 4]> = matches
        .iter()
        .map(|m| {
            let (q, t) = (m.query as usize, m.train as usize);
            [ka.x[q], ka.y[q], kb.x[t], kb.y[t]]
        })
        .collect();

    let (n, ratio) = (
        config.orb.n_features.to_string(),
        config.matching.ratio.to_string(),
    );
    let opencv: OpencvMatches = peer::run(
        "orb_matches.py",
        &[
            OsStr::new(&n),
            OsStr::new(&ratio),
            a_pgm.as_os_str(),
            b_pgm.as_os_str(),
        ],
    );

    let pairs_file = dir.path().join("pairs.json");
    let sets = HashMap::from([("ours", &our_pairs), ("opencv", &opencv.pairs)]);
    std::fs::write(&pairs_file, serde_json::to_vec(&sets).unwrap()).unwrap();
    let threshold = CORRECT_MATCH_PX.to_string();
    let inliers: HashMap<String, Vec<bool>> = peer::run(
        "ransac.py",
        &[OsStr::new(&threshold), pairs_file.as_os_str()],
    );

    let truth = graf_ground_truth();
    let ours_correct = correct_matches(&our_pairs, &inliers["ours"], &truth);
    let opencv_correct = correct_matches(&opencv.pairs, &inliers["opencv"], &truth);
    println!(
        "graf1->graf3 correct matches (RANSAC inliers within {CORRECT_MATCH_PX} px of H1to3p): \
         ours {ours_correct} of {} matches ({} + {} keypoints), \
         OpenCV {opencv_correct} of {} matches ({} + {} keypoints)",
        our_pairs.len(),
        fa.len(),
        fb.len(),
        opencv.pairs.len(),
        opencv.keypoints_a,
        opencv.keypoints_b,
    );
    // Not asserted: tells a worse RANSAC model apart from worse matches.
    let within_truth =
        |pairs: &[[f32; 4]]| correct_matches(pairs, &vec![true; pairs.len()], &truth);
    println!(
        "matches within {CORRECT_MATCH_PX} px of H1to3p before RANSAC: ours {}, OpenCV {}",
        within_truth(&our_pairs),
        within_truth(&opencv.pairs)
    );
    // Guards the comparison itself: OpenCV ORB finds over a hundred on this pair.
    assert!(
        opencv_correct >= 50,
        "the OpenCV peer found only {opencv_correct} correct matches: the protocol is broken"
    );
    assert!(
        ours_correct >= opencv_correct,
        "ours {ours_correct} < OpenCV {opencv_correct} correct matches"
    );
}

/// `warp.py`'s output: the transformed images of OpenCV's invariance tests.
#[derive(Deserialize)]
struct Warps {
    mask: PathBuf,
    rotations: Vec<Rotation>,
    scales: Vec<Scale>,
}

#[derive(Deserialize)]
struct Rotation {
    angle: f32,
    image: PathBuf,
    mask: PathBuf,
    h: [f64; 9],
}

#[derive(Deserialize)]
struct Scale {
    scale: f32,
    image: PathBuf,
}

/// The image `name` as orbsift's grey PGM, and its rotations and scalings, in `dir`.
fn warps(dir: &Path, name: &str) -> (PathBuf, Warps) {
    let original = write_pgm(dir, "original", &open(&test_data(name)));
    let warps = peer::run("warp.py", &[original.as_os_str(), dir.as_os_str()]);
    (original, warps)
}

fn image_and_mask(image: &Path, mask: &Path) -> String {
    format!("{}:{}", image.display(), mask.display())
}

#[test]
fn detector_is_rotation_invariant_by_opencv_protocol() {
    let config = opencv_test_config();
    let dir = tempfile::tempdir().unwrap();
    let (original, warps) = warps(dir.path(), ROTATION_IMAGE);
    let base = ours_in_mask(&config, &original, &warps.mask).keypoints;
    assert!(base.len() >= 15, "only {} keypoints", base.len());

    let mut specs = vec![image_and_mask(&original, &warps.mask)];
    specs.extend(
        warps
            .rotations
            .iter()
            .map(|r| image_and_mask(&r.image, &r.mask)),
    );
    let opencv = peer::opencv_orb(OPENCV_TEST_FEATURES, &specs);
    let opencv_base = opencv[0].keypoints();

    println!(
        "{ROTATION_IMAGE}: {} keypoints (OpenCV {})",
        base.len(),
        opencv_base.len()
    );
    println!("angle | ours: match ratio, angle inliers | OpenCV: match ratio, angle inliers");
    let mut failures = Vec::new();
    let mut worst = (f32::INFINITY, f32::INFINITY);
    for (rotation, opencv_rotated) in warps.rotations.iter().zip(&opencv[1..]) {
        let rotated = ours_in_mask(&config, &rotation.image, &rotation.mask).keypoints;
        let score = invariance::detector_rotation(&base, &rotated, &rotation.h, rotation.angle);
        let RotationScore {
            match_ratio: cv_match,
            angle_inlier_ratio: cv_angle,
        } = invariance::detector_rotation(
            &opencv_base,
            &opencv_rotated.keypoints(),
            &rotation.h,
            rotation.angle,
        );
        println!(
            "{:5} | {:.3}, {:.3} | {cv_match:.3}, {cv_angle:.3}",
            rotation.angle, score.match_ratio, score.angle_inlier_ratio
        );
        worst = (
            worst.0.min(score.match_ratio),
            worst.1.min(score.angle_inlier_ratio),
        );
        if score.match_ratio < MIN_ROTATION_MATCH_RATIO
            || score.angle_inlier_ratio < MIN_ROTATION_ANGLE_INLIERS
        {
            failures.push((rotation.angle, score));
        }
    }
    println!(
        "worst: match ratio {:.3} (>= {MIN_ROTATION_MATCH_RATIO}), \
         angle inliers {:.3} (>= {MIN_ROTATION_ANGLE_INLIERS})",
        worst.0, worst.1
    );
    assert!(
        failures.is_empty(),
        "below OpenCV's ORB thresholds: {failures:?}"
    );
}

#[test]
fn detector_is_scale_invariant_by_opencv_protocol() {
    let config = opencv_test_config();
    let dir = tempfile::tempdir().unwrap();
    let (original, warps) = warps(dir.path(), SCALE_IMAGE);
    let base = ours(&config, &open(&original)).keypoints;
    assert!(base.len() >= 15, "only {} keypoints", base.len());

    let mut specs = vec![original.display().to_string()];
    specs.extend(warps.scales.iter().map(|s| s.image.display().to_string()));
    let opencv = peer::opencv_orb(OPENCV_TEST_FEATURES, &specs);
    let opencv_base = opencv[0].keypoints();

    println!(
        "{SCALE_IMAGE}: {} keypoints (OpenCV {})",
        base.len(),
        opencv_base.len()
    );
    println!(
        "scale | ours: keypoints, match ratio, size inliers | OpenCV: match ratio, size inliers"
    );
    let mut failures = Vec::new();
    for (scale, opencv_shrunk) in warps.scales.iter().zip(&opencv[1..]) {
        let shrunk = ours(&config, &open(&scale.image)).keypoints;
        let score = invariance::detector_scale(&base, &shrunk, scale.scale);
        let ScaleScore {
            match_ratio: cv_match,
            size_inlier_ratio: cv_size,
        } = invariance::detector_scale(&opencv_base, &opencv_shrunk.keypoints(), scale.scale);
        println!(
            "{:5} | {}, {:.3}, {:.3} | {cv_match:.3}, {cv_size:.3}",
            scale.scale,
            shrunk.len(),
            score.match_ratio,
            score.size_inlier_ratio
        );
        let enough = shrunk.len() >= 15 && shrunk.len() <= base.len();
        if !enough
            || score.match_ratio < MIN_SCALE_MATCH_RATIO
            || score.size_inlier_ratio < MIN_SCALE_SIZE_INLIERS
        {
            failures.push((scale.scale, shrunk.len(), score));
        }
    }
    assert!(
        failures.is_empty(),
        "below OpenCV's ORB thresholds: {failures:?}"
    );
}

#[test]
fn descriptor_is_rotation_invariant_by_opencv_protocol() {
    let config = opencv_test_config();
    let dir = tempfile::tempdir().unwrap();
    let (original, warps) = warps(dir.path(), ROTATION_IMAGE);
    let base = ours_in_mask(&config, &original, &warps.mask);
    assert!(base.len() >= 15, "only {} keypoints", base.len());
    // OpenCV's protocol: the best descriptor match, no ratio test, no cross-check.
    let mut matcher = BruteForceMatcher::new(MatchConfig {
        ratio: 1.0,
        cross_check: false,
        ..MatchConfig::default()
    });

    let mut describer = extractor(&config);
    let mut failures = Vec::new();
    let mut worst = f32::INFINITY;
    for rotation in &warps.rotations {
        let image = open(&rotation.image);
        let moved = invariance::rotated(&base.keypoints, &rotation.h, rotation.angle);
        let descriptors = describer
            .describe_at(&image, &moved)
            .expect("rotated keypoints lie inside the rotated image");
        assert_eq!(
            descriptors.len(),
            moved.len(),
            "one descriptor per keypoint"
        );
        let described = Features {
            width: image.width(),
            height: image.height(),
            keypoints: moved,
            descriptors,
        };
        let matches = matcher.match_features(&base, &described).unwrap();
        let inliers = invariance::descriptor_rotation(&described.keypoints, &matches, base.len());
        println!(
            "angle {:3}: descriptor inliers {inliers:.3}",
            rotation.angle
        );
        worst = worst.min(inliers);
        if inliers < MIN_DESCRIPTOR_ROTATION_INLIERS {
            failures.push((rotation.angle, inliers));
        }
    }
    println!(
        "{ROTATION_IMAGE}, {} keypoints: worst descriptor inliers {worst:.3} \
         (>= {MIN_DESCRIPTOR_ROTATION_INLIERS})",
        base.len()
    );
    assert!(
        failures.is_empty(),
        "below OpenCV's ORB threshold: {failures:?}"
    );
}

/// Real images of different kinds: a planar poster, a phone photo, an indoor scene, a sport frame.
const COMPATIBILITY_IMAGES: [&str; 4] = [
    "graf1.png",
    "leuvenA.jpg",
    "rubberwhale1.png",
    "basketball1.png",
];
/// The bound on the mean number of differing bits (of 256) at OpenCV's keypoints.
const MAX_MEAN_DIFFERING_BITS: f64 = 8.0;

#[test]
fn descriptors_at_opencv_keypoints_equal_opencvs() {
    let dir = tempfile::tempdir().unwrap();
    let images: Vec<GrayImage> = COMPATIBILITY_IMAGES
        .iter()
        .map(|name| open(&test_data(name)))
        .collect();
    let specs: Vec<String> = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            write_pgm(dir.path(), &i.to_string(), image)
                .display()
                .to_string()
        })
        .collect();
    // OpenCV's defaults besides the budget: 8 levels of scale 1.2, as ours.
    let config = OrbConfig::default();
    let opencv = peer::opencv_orb(config.n_features, &specs);
    let mut describer = extractor(&config);

    // Differing bits of every descriptor, by pyramid level.
    let mut by_octave: BTreeMap<i32, Vec<u32>> = BTreeMap::new();
    for ((name, image), peer_features) in COMPATIBILITY_IMAGES.iter().zip(&images).zip(&opencv) {
        let keypoints = peer_features.keypoints();
        let expected = peer_features.descriptors();
        assert_eq!(
            expected.len(),
            keypoints.len(),
            "{name}: one OpenCV descriptor per keypoint"
        );
        let got = describer
            .describe_at(image, &keypoints)
            .expect("OpenCV's keypoints can be described");
        assert_eq!(
            got.len(),
            keypoints.len(),
            "{name}: one descriptor per keypoint"
        );
        let mut image_total = 0u64;
        for i in 0..keypoints.len() {
            let bits = differing_bits(got.get(i), expected.get(i));
            image_total += bits as u64;
            by_octave.entry(keypoints.octave[i]).or_default().push(bits);
        }
        println!(
            "{name}: {} keypoints, mean differing bits {:.3}",
            keypoints.len(),
            image_total as f64 / keypoints.len() as f64
        );
    }

    println!("octave | descriptors | mean | identical | p90 | max differing bits");
    let (mut total, mut count) = (0u64, 0usize);
    for (octave, bits) in &mut by_octave {
        bits.sort_unstable();
        let sum: u64 = bits.iter().map(|&b| b as u64).sum();
        let identical = bits.iter().take_while(|&&b| b == 0).count();
        println!(
            "{octave:6} | {:11} | {:.3} | {:.1}% | {} | {}",
            bits.len(),
            sum as f64 / bits.len() as f64,
            100.0 * identical as f64 / bits.len() as f64,
            bits[bits.len() * 9 / 10],
            bits[bits.len() - 1]
        );
        total += sum;
        count += bits.len();
    }
    assert!(count > 0, "OpenCV found no keypoints");
    let mean = total as f64 / count as f64;
    println!(
        "all: {count} descriptors, mean differing bits {mean:.3} (<= {MAX_MEAN_DIFFERING_BITS})"
    );
    assert!(
        mean <= MAX_MEAN_DIFFERING_BITS,
        "descriptors differ from OpenCV's by {mean:.3} bits on average"
    );
}
