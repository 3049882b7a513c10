//! The CPU extractor and matcher together on real images, where the right answer is
//! known without trusting our own code: a frame against itself, a frame against an
//! exact 90 degree rotation of itself, and Lowe's own SIFT descriptors against a
//! reversed copy.

use std::path::PathBuf;

use orbsift::{
    Backend, Config, DescriptorKind, Descriptors, Features, GrayImage, Keypoints, Match,
};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn image(name: &str) -> GrayImage {
    GrayImage::open(&data(name)).unwrap()
}

fn cpu_config() -> Config {
    Config {
        backend: Backend::Cpu,
        ..Config::default()
    }
}

fn extract(config: &Config, image: &GrayImage) -> Features {
    orbsift::create_extractor(config)
        .unwrap()
        .extract(image)
        .unwrap()
}

fn match_features(config: &Config, query: &Features, train: &Features) -> Vec<Match> {
    orbsift::create_matcher(config)
        .unwrap()
        .match_features(query, train)
        .unwrap()
}

/// Clockwise by 90 degrees: pixel `(x, y)` moves to `(h - 1 - y, x)`.
fn rotate_clockwise(image: &GrayImage) -> GrayImage {
    let (w, h) = (image.width(), image.height());
    let mut data = vec![0u8; w * h];
    for y in 0..h {
        for x in 0..w {
            data[x * h + (h - 1 - y)] = image.get(x, y);
        }
    }
    GrayImage::new(h, w, data).unwrap()
}

#[test]
fn a_frame_matched_against_itself_pairs_every_keypoint_with_itself() {
    let config = cpu_config();
    let features = extract(&config, &image("basketball1.png"));
    assert!(features.len() > 500, "{} keypoints", features.len());
    let matches = match_features(&config, &features, &features);
    assert!(
        matches
            .iter()
            .all(|m| m.query == m.train && m.distance == 0.0),
        "a keypoint matched another one"
    );
    // Only keypoints sharing their exact descriptor with another one fail the ratio test.
    assert!(
        matches.len() * 100 >= features.len() * 99,
        "{} of {} matched",
        matches.len(),
        features.len()
    );
}

#[test]
fn matches_to_a_rotated_copy_follow_the_rotation() {
    let config = cpu_config();
    let original = image("graf1.png");
    let rotated = rotate_clockwise(&original);
    let (a, b) = (extract(&config, &original), extract(&config, &rotated));
    let matches = match_features(&config, &a, &b);
    let h = original.height() as f32;
    let correct = matches
        .iter()
        .filter(|m| {
            let (i, j) = (m.query as usize, m.train as usize);
            let expected = (h - 1.0 - a.keypoints.y[i], a.keypoints.x[i]);
            let found = (b.keypoints.x[j], b.keypoints.y[j]);
            // Two pixels of the keypoint's pyramid level.
            let tolerance = 2.0 * config.orb.scale_factor.powi(a.keypoints.octave[i]) as f32;
            (expected.0 - found.0).hypot(expected.1 - found.1) <= tolerance
        })
        .count();
    eprintln!("{correct} of {} matches follow the rotation", matches.len());
    assert!(correct >= 300, "only {correct} correct matches");
    assert!(
        correct * 10 >= matches.len() * 9,
        "{correct} of {}",
        matches.len()
    );
}

/// Lowe's descriptors for box.pgm: header `N 128`, then per keypoint
/// `row col scale orientation` and 128 integers.
fn lowe_box_descriptors() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(data("box.sift")).unwrap();
    let mut tokens = text.split_whitespace();
    let mut next = || tokens.next().unwrap();
    let n: usize = next().parse().unwrap();
    assert_eq!(next(), "128");
    (0..n)
        .map(|_| {
            let _frame: Vec<&str> = (0..4).map(|_| next()).collect();
            (0..128).map(|_| next().parse().unwrap()).collect()
        })
        .collect()
}

fn sift_features(descriptors: &[Vec<u8>]) -> Features {
    let mut keypoints = Keypoints::with_capacity(descriptors.len());
    for _ in descriptors {
        keypoints.push(0.0, 0.0, 1.0, 0.0, 0.0, 0);
    }
    Features {
        width: 324,
        height: 223,
        keypoints,
        descriptors: Descriptors {
            kind: DescriptorKind::Sift128U8,
            data: descriptors.concat(),
        },
    }
}

#[test]
fn lowe_sift_descriptors_find_their_reversed_copies() {
    let descriptors = lowe_box_descriptors();
    let n = descriptors.len();
    assert_eq!(n, 638);
    let reversed: Vec<Vec<u8>> = descriptors.iter().rev().cloned().collect();
    let matches = match_features(
        &cpu_config(),
        &sift_features(&descriptors),
        &sift_features(&reversed),
    );
    assert!(
        matches
            .iter()
            .all(|m| m.train as usize == n - 1 - m.query as usize && m.distance == 0.0),
        "a descriptor matched another one"
    );
    // Only exact duplicates among Lowe's descriptors may fail the ratio test.
    assert!(
        matches.len() * 100 >= n * 99,
        "{} of {n} matched",
        matches.len()
    );
}
