//! The CPU extractor and matcher together on real images, where the right answer is
//! known without trusting our own code: a frame against itself, and a frame against
//! an exact 90 degree rotation of itself.

use std::path::PathBuf;

use orbsift::{Backend, Config, Features, GrayImage, Match};

fn image(name: &str) -> GrayImage {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    GrayImage::open(&path).unwrap()
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
