//! config/sift.yaml loads, selects SIFT, documents exactly the defaults, and runs.

use std::path::Path;

use orbsift::{Algorithm, Backend, Config, DescriptorKind, GrayImage, SiftConfig};

#[test]
fn the_shipped_sift_config_selects_sift_with_opencv_defaults() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = Config::load(Some(&root.join("config/sift.yaml")), &[]).unwrap();
    assert_eq!(config.algorithm, Algorithm::Sift);
    assert_eq!(config.sift, SiftConfig::default());
    config.backend = Backend::Cpu;
    let mut extractor = orbsift::create_extractor(&config).unwrap();
    let image = GrayImage::open(&root.join("tests/data/box.pgm")).unwrap();
    let features = extractor.extract(&image).unwrap();
    assert!(features.len() > 100, "{} keypoints", features.len());
    assert_eq!(features.descriptors.kind, DescriptorKind::Sift128U8);
    assert_eq!(features.descriptors.len(), features.len());
}
