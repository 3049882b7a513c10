//! The CPU SIFT against David Lowe's own SIFT output for box.pgm (tests/data/box.sift),
//! with VLFeat's published test (`toolbox/xtest/vl_test_sift.m`):
//! - descriptors computed at Lowe's frames: mean ||d_lowe - d|| / mean ||d_lowe|| < 0.1;
//! - detector (peak threshold 0.01, edge threshold 10): for each of our frames the
//!   distance to the nearest Lowe frame over (x, y, sigma, angle * 20 / pi), angles taken
//!   mod 2 pi; its 80th percentile < 1.
//!
//! Conventions, from VLFeat's readers and MEX: `vl_ubcread` turns Lowe's `row col scale
//! orientation` into `x = col`, `y = row` (plus MATLAB's 1), `sigma = scale`, `theta =
//! -orientation`; `vl_sift` reports `theta` from x towards y (down), which is OpenCV's
//! `KeyPoint::angle` (clockwise on screen), so our angle is `-orientation` and our size is
//! `2 sigma`. `vl_ubcread` reverses Lowe's orientation bins (bin k <- bin -k mod 8) to
//! VLFeat's order and VLFeat's `transpose_descriptor` reverses them again relative to
//! OpenCV's, with the same row-major spatial bins: Lowe's descriptors compare with ours
//! index by index. VLFeat 0.9.21 itself (Debian `libvlfeat1`, run through this exact
//! protocol) measures 0.079 and 0.19.
//!
//! Lowe doubles the image with input pixel x at 2x, as OpenCV's `enable_precise_upscale`
//! (`sift.precise_upscale`) does. OpenCV's default half-pixel `resize` instead leaves every
//! keypoint 0.25 px off the image content and changes the finest octave's pixels (OpenCV
//! logs that this default "was found to induce a location bias"); with it both bounds are
//! missed, by OpenCV 5.0 as by us (the ignored tests below).

use std::path::Path;

use orbsift::cpu::sift::SiftExtractor;
use orbsift::{GrayImage, Keypoints, SiftConfig};

struct LoweKeypoint {
    row: f32,
    col: f32,
    scale: f32,
    orientation: f32,
    descriptor: Vec<f32>,
}

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read_lowe(path: &Path) -> Vec<LoweKeypoint> {
    let text = std::fs::read_to_string(path).expect("tests/data/box.sift is readable");
    let mut numbers = text.split_whitespace().map(|t| t.parse::<f32>().unwrap());
    let count = numbers.next().unwrap() as usize;
    let length = numbers.next().unwrap() as usize;
    assert_eq!(length, 128);
    let keypoints: Vec<LoweKeypoint> = (0..count)
        .map(|_| {
            let mut next = || numbers.next().expect("box.sift is truncated");
            let (row, col, scale, orientation) = (next(), next(), next(), next());
            LoweKeypoint {
                row,
                col,
                scale,
                orientation,
                descriptor: (0..128).map(|_| next()).collect(),
            }
        })
        .collect();
    assert!(numbers.next().is_none(), "box.sift has trailing data");
    keypoints
}

/// Lowe's orientation as our angle in degrees, clockwise on screen, in [0, 360).
fn opencv_angle_degrees(lowe_orientation: f32) -> f32 {
    let a = (-lowe_orientation).to_degrees().rem_euclid(360.0);
    if a >= 360.0 {
        0.0
    } else {
        a
    }
}

fn norm(v: impl Iterator<Item = f32>) -> f32 {
    v.map(|x| x * x).sum::<f32>().sqrt()
}

/// VLFeat's descriptor error at Lowe's frames, the pyramid upsampled as `precise_upscale` says.
fn descriptor_error(precise_upscale: bool) -> f32 {
    let image = GrayImage::open(&data("box.pgm")).unwrap();
    let lowe = read_lowe(&data("box.sift"));
    let mut frames = Keypoints::with_capacity(lowe.len());
    for k in &lowe {
        frames.push(
            k.col,
            k.row,
            2.0 * k.scale,
            opencv_angle_degrees(k.orientation),
            0.0,
            0,
        );
    }
    let config = SiftConfig {
        precise_upscale,
        ..SiftConfig::default()
    };
    let ours = SiftExtractor::new(config)
        .unwrap()
        .describe_frames(&image, &frames)
        .unwrap();
    assert_eq!(ours.len(), lowe.len());

    let mean_diff = lowe
        .iter()
        .zip(ours.iter())
        .map(|(k, d)| norm(k.descriptor.iter().zip(d).map(|(a, &b)| a - b as f32)))
        .sum::<f32>()
        / lowe.len() as f32;
    let mean_norm = lowe
        .iter()
        .map(|k| norm(k.descriptor.iter().copied()))
        .sum::<f32>()
        / lowe.len() as f32;
    let error = mean_diff / mean_norm;
    println!(
        "box.pgm, {} Lowe frames, precise upscale {precise_upscale}: mean ||d_lowe - d|| / mean ||d_lowe|| = {error:.4} (VLFeat bound 0.1)",
        lowe.len()
    );
    error
}

#[test]
fn descriptors_at_lowes_frames_match_lowes_descriptors() {
    let error = descriptor_error(true);
    assert!(error < 0.1, "descriptor error {error} >= 0.1");
}

#[test]
#[ignore = "OpenCV's default half-pixel upsampling (not Lowe's): measured 0.1133 (OpenCV 5.0: 0.1133), bound 0.1; run with --ignored"]
fn descriptors_at_lowes_frames_match_lowes_descriptors_with_opencvs_default_upsampling() {
    let error = descriptor_error(false);
    assert!(error < 0.1, "descriptor error {error} >= 0.1");
}

/// VLFeat's detector check: the 80th percentile of our frames' distances to Lowe's.
fn detector_quantile_80(precise_upscale: bool) -> f32 {
    let image = GrayImage::open(&data("box.pgm")).unwrap();
    let lowe = read_lowe(&data("box.sift"));
    // VLFeat's test detects with peak threshold 0.01 on |DoG| (0..1 grey scale); OpenCV's
    // contrast test is |DoG| * n_octave_layers < contrast_threshold, so 0.03 is the same cut.
    let config = SiftConfig {
        contrast_threshold: 0.03,
        edge_threshold: 10.0,
        precise_upscale,
        ..SiftConfig::default()
    };
    let features = SiftExtractor::new(config)
        .unwrap()
        .detect_and_describe(&image);
    let kp = &features.keypoints;
    assert!(kp.len() > 100, "only {} keypoints on box.pgm", kp.len());

    let angle_weight = 20.0 / std::f32::consts::PI;
    let lowe_frames: Vec<[f32; 4]> = lowe
        .iter()
        .map(|k| {
            let angle = (-k.orientation).rem_euclid(std::f32::consts::TAU);
            [k.col, k.row, k.scale, angle * angle_weight]
        })
        .collect();
    let mut nearest: Vec<f32> = (0..kp.len())
        .map(|i| {
            let ours = [
                kp.x[i],
                kp.y[i],
                kp.size[i] / 2.0,
                kp.angle[i].to_radians() * angle_weight,
            ];
            lowe_frames
                .iter()
                .map(|f| norm(f.iter().zip(&ours).map(|(a, b)| a - b)))
                .fold(f32::INFINITY, f32::min)
        })
        .collect();
    nearest.sort_by(f32::total_cmp);
    // VLFeat: error(round(0.8 * N)) with 1-based indexing.
    let quantile_80 = nearest[((0.8 * nearest.len() as f32).round() as usize).max(1) - 1];
    println!(
        "box.pgm, precise upscale {precise_upscale}: {} of our frames, {} of Lowe's; 80th-percentile nearest-frame distance = {quantile_80:.4} (VLFeat bound 1)",
        kp.len(),
        lowe.len()
    );
    quantile_80
}

#[test]
fn detected_frames_are_near_lowes_frames() {
    let quantile_80 = detector_quantile_80(true);
    assert!(
        quantile_80 < 1.0,
        "80th percentile distance {quantile_80} >= 1"
    );
}

#[test]
#[ignore = "OpenCV's default half-pixel upsampling (not Lowe's): 80th percentile 6.43 (OpenCV 5.0: 6.43; a quarter of the frames have no Lowe frame within 2 px), bound 1; run with --ignored"]
fn detected_frames_are_near_lowes_frames_with_opencvs_default_upsampling() {
    let quantile_80 = detector_quantile_80(false);
    assert!(
        quantile_80 < 1.0,
        "80th percentile distance {quantile_80} >= 1"
    );
}
