//! The CUDA ORB backend against the CPU reference on real images (tests/data) resized
//! to 640x480 .. 3840x2160, in both memory modes. GPU tests run through
//! scripts/gpu-check.sh; the backend-choice test runs everywhere.
#![cfg(feature = "cuda")]

mod common;

use std::collections::HashSet;

use orbsift::config::{Backend, MemoryMode, ORB_MAX_FEATURES};
use orbsift::cpu::matcher::BruteForceMatcher;
use orbsift::cpu::orb::OrbExtractor;
use orbsift::cuda::CudaOrbExtractor;
use orbsift::{
    Config, DescriptorKind, Descriptors, Extractor, Features, GrayImage, MatchConfig, Matcher,
    OrbConfig, Residency,
};

use common::confinement::assert_green_context;
use common::frames::{load, resized, ORB_IMAGES};
use common::orb::{cpu_orb, differing_bits};

const SIZES: [(u32, u32); 4] = [(640, 480), (1280, 960), (1920, 1080), (3840, 2160)];

/// Same keypoints (position, level, and the host-computed angle and response), and
/// at least 99.9 % identical descriptor bits; returns the differing bits.
fn assert_parity(what: &str, reference: &Features, gpu: &Features) -> u64 {
    let (r, g) = (&reference.keypoints, &gpu.keypoints);
    assert_eq!(r.len(), g.len(), "{what}: keypoint count");
    for i in 0..r.len() {
        assert_eq!(
            (r.x[i], r.y[i], r.octave[i]),
            (g.x[i], g.y[i], g.octave[i]),
            "{what}: keypoint {i}"
        );
        assert_eq!(r.size[i], g.size[i], "{what}: size {i}");
        assert_eq!(r.response[i], g.response[i], "{what}: response {i}");
        assert_eq!(r.angle[i], g.angle[i], "{what}: angle {i}");
    }
    let bits = 8 * reference.descriptors.data.len() as u64;
    let differing = u64::from(differing_bits(
        &reference.descriptors.data,
        &gpu.descriptors.data,
    ));
    assert!(
        differing * 1000 <= bits,
        "{what}: {differing} of {bits} descriptor bits differ"
    );
    differing
}

#[test]
fn backend_choice_follows_gpu_availability() {
    let mut config = Config::default();
    let available = orbsift::cuda::availability();
    config.backend = Backend::Cuda;
    let cuda = orbsift::create_extractor(&config);
    config.backend = Backend::Auto;
    let auto = orbsift::create_extractor(&config).expect("auto always gives an extractor");
    match available {
        Ok(()) => {
            assert_eq!(cuda.expect("cuda with a GPU").backend_name(), "cuda");
            assert_eq!(auto.backend_name(), "cuda");
        }
        Err(reason) => {
            let error = cuda
                .err()
                .expect("cuda without a GPU must fail")
                .to_string();
            assert!(error.contains("not available"), "{error}");
            assert_eq!(error, reason.to_string());
            assert_eq!(auto.backend_name(), "cpu");
            let image = load("graf1.png");
            let features = auto.extract_owned(&image);
            assert_eq!(features, cpu_orb(&config.orb, &image));
        }
    }
}

/// `Extractor::extract` through a box, for the test above.
trait ExtractOwned {
    fn extract_owned(self, image: &GrayImage) -> Features;
}

impl ExtractOwned for Box<dyn Extractor> {
    fn extract_owned(mut self, image: &GrayImage) -> Features {
        self.extract(image).expect("extraction")
    }
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn matches_the_cpu_reference_on_real_images_in_both_memory_modes() {
    let config = OrbConfig::default();
    let mut device = CudaOrbExtractor::new(config.clone(), MemoryMode::Device, None).unwrap();
    let mut unified = CudaOrbExtractor::new(config.clone(), MemoryMode::Unified, None).unwrap();
    assert!(unified.is_unified() && !device.is_unified());
    let (mut bits, mut differing) = (0u64, 0u64);
    for name in ORB_IMAGES {
        let original = load(name);
        for size in SIZES {
            let image = resized(&original, size);
            let reference = cpu_orb(&config, &image);
            assert!(
                reference.len() > 100,
                "{name} {size:?}: too few keypoints to compare"
            );
            for (mode, extractor) in [("device", &mut device), ("unified", &mut unified)] {
                let what = format!("{name} {}x{} {mode}", size.0, size.1);
                let gpu = extractor.extract(&image).unwrap();
                differing += assert_parity(&what, &reference, &gpu);
                bits += 8 * reference.descriptors.data.len() as u64;
                println!("PARITY {what}: {} keypoints identical", gpu.len());
            }
        }
    }
    println!("PARITY descriptor bits differing: {differing} of {bits}");
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn fast_score_and_small_grids_match_too() {
    let configs = [
        OrbConfig {
            score: orbsift::config::OrbScore::Fast,
            ..OrbConfig::default()
        },
        OrbConfig {
            n_features: 500,
            n_levels: 4,
            scale_factor: 1.5,
            grid_cell_size: 16,
            edge_threshold: 19,
            ..OrbConfig::default()
        },
        // One cell per level: more NMS survivors than orb_cell_candidates lists, so
        // it rescans the cell.
        OrbConfig {
            grid_cell_size: 1024,
            ..OrbConfig::default()
        },
        // Levels more than twice smaller than the level before: orb_pyramid reads
        // their source pixels byte by byte instead of as aligned windows.
        OrbConfig {
            n_levels: 4,
            scale_factor: 2.5,
            ..OrbConfig::default()
        },
    ];
    let image = resized(&load("leuvenA.jpg"), (1280, 960));
    for config in configs {
        let mut gpu = CudaOrbExtractor::new(config.clone(), MemoryMode::Auto, None).unwrap();
        let what = format!("{config:?}");
        assert_parity(
            &what,
            &cpu_orb(&config, &image),
            &gpu.extract(&image).unwrap(),
        );
    }
}

/// Level 0's candidates scoring exactly the FAST pre-filter's cut score s*
/// (docs/orb-reference.md §5, grid step 1), from the CPU reference's score map.
fn level0_ties_at_the_cut(reference: &OrbExtractor, config: &OrbConfig) -> usize {
    use orbsift::cpu::candidates::{apply_cell_thresholds, local_maxima};
    use orbsift::spec::grid::{DetectionArea, Grid};
    let level = reference.level(0).expect("level 0");
    let (width, height) = (level.geometry.width, level.geometry.height);
    let area = DetectionArea::new(width, height, config.edge_threshold as usize).expect("area");
    let mut candidates = Vec::new();
    local_maxima(level.scores, width, &area, &mut candidates);
    let grid = Grid::new(area, config.grid_cell_size as usize);
    apply_cell_thresholds(
        &mut candidates,
        &grid,
        config.fast_threshold as u8,
        &mut Vec::new(),
    );
    let wanted = 2 * orbsift::spec::quotas::level_quotas(
        config.n_features,
        config.n_levels,
        config.scale_factor,
    )[0];
    let mut at_least = 0;
    for score in (0..=255u8).rev() {
        let ties = candidates.iter().filter(|c| c.score == score).count();
        if at_least + ties >= wanted {
            return ties;
        }
        at_least += ties;
    }
    0
}

/// 20,000 features: level 0 has about 8,700 selection records (2 quota), so each is
/// ranked against thousands of others by orb_record_ranks / orb_record_place, and level 0
/// has more candidates at the cut score than orb_select_candidates lists (TIE_LIST,
/// 1024), so the raster-order tie break re-reads the level's candidates.
#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn many_features_select_from_global_scratch_and_unlisted_ties() {
    let config = OrbConfig {
        n_features: 20_000,
        ..OrbConfig::default()
    };
    let image = resized(&load("leuvenA.jpg"), (3840, 2160));
    let mut reference = OrbExtractor::new(config.clone()).unwrap();
    let expected = reference.extract(&image).unwrap();
    let ties = level0_ties_at_the_cut(&reference, &config);
    assert!(
        ties > 1024,
        "only {ties} ties at level 0's cut: the test misses its case"
    );
    let mut gpu = CudaOrbExtractor::new(config, MemoryMode::Device, None).unwrap();
    assert_parity("20,000 features", &expected, &gpu.extract(&image).unwrap());
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn sm_limit_and_repeated_frames_give_identical_results() {
    let config = OrbConfig::default();
    let image = resized(&load("graf1.png"), (1920, 1080));
    let mut full = CudaOrbExtractor::new(config.clone(), MemoryMode::Device, None).unwrap();
    let mut eight = CudaOrbExtractor::new(config, MemoryMode::Device, Some(8)).unwrap();
    assert_green_context(&eight, 8);
    let first = full.extract(&image).unwrap();
    for _ in 0..5 {
        assert_eq!(
            full.extract(&image).unwrap(),
            first,
            "repeated frame differs"
        );
    }
    assert_eq!(
        eight.extract(&image).unwrap(),
        first,
        "8 SMs differ from all SMs"
    );
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn fused_matching_finds_the_brute_force_nearest_neighbours() {
    let config = OrbConfig::default();
    let mut gpu = CudaOrbExtractor::new(config, MemoryMode::Device, None).unwrap();
    let train = gpu
        .extract(&resized(&load("graf1.png"), (1280, 960)))
        .unwrap();
    gpu.set_train(Some(&train.descriptors)).unwrap();
    let query = gpu
        .extract(&resized(&load("graf3.png"), (1280, 960)))
        .unwrap();
    let matches = gpu.last_matches();
    assert_eq!(matches.len(), query.len());
    for (i, q) in query.descriptors.iter().enumerate() {
        let mut distances: Vec<(u64, usize)> = train
            .descriptors
            .iter()
            .enumerate()
            .map(|(j, t)| (u64::from(differing_bits(q, t)), j))
            .collect();
        distances.sort();
        let m = matches[i];
        assert_eq!(m.best_index as usize, distances[0].1, "query {i}");
        assert_eq!(m.best as u64, distances[0].0, "query {i}");
        assert_eq!(m.second as u64, distances[1].0, "query {i}");
    }

    // The kernels key a train descriptor by its index below 2^23: a larger set is refused.
    let too_many = Descriptors {
        kind: DescriptorKind::Orb256,
        data: vec![0; (ORB_MAX_FEATURES as usize + 1) * DescriptorKind::Orb256.bytes()],
    };
    let refused = gpu.set_train(Some(&too_many)).unwrap_err().to_string();
    assert!(refused.contains("train set"), "{refused}");
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn every_stage_matches_the_cpu_reference_level_by_level() {
    let config = OrbConfig::default();
    let image = resized(&load("graf1.png"), (640, 480));
    let mut reference = OrbExtractor::new(config.clone()).unwrap();
    let cpu_features = reference.extract(&image).unwrap();
    let mut gpu = CudaOrbExtractor::new(config, MemoryMode::Device, None).unwrap();
    let gpu_features = gpu.extract(&image).unwrap();
    let stages = gpu.stage_images().unwrap();
    for (l, stage) in stages.iter().enumerate() {
        let (pyramid, scores, smoothed) = (&stage.image, &stage.scores, &stage.smoothed);
        let level = reference.level(l).unwrap();
        let cpu_pixels = level.image.unwrap_or(image.data());
        assert!(cpu_pixels == &pyramid[..], "level {l}: pyramid differs");
        let differing = level
            .scores
            .iter()
            .zip(scores)
            .filter(|(a, b)| a != b)
            .count();
        let width = level.geometry.width;
        for (i, (a, b)) in level
            .scores
            .iter()
            .zip(scores)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
        {
            let (x, y) = (i % width, i / width);
            let ring: Vec<u8> = orbsift::spec::fast_arc::RING
                .iter()
                .map(|&(dx, dy)| {
                    cpu_pixels[(y as isize + dy) as usize * width + (x as isize + dx) as usize]
                })
                .collect();
            println!(
                "STAGE level {l} ({x}, {y}): cpu {a} gpu {b}, centre {} ring {ring:?}",
                cpu_pixels[i]
            );
        }
        assert_eq!(differing, 0, "level {l}: {differing} FAST scores differ");
        // The CPU smooths only the tiles its descriptors read.
        if let Some(reference) = level.smoothed {
            let differing = (0..reference.len())
                .filter(|&i| level.smoothed_tiles.covers(i % width, i / width))
                .filter(|&i| reference[i] != smoothed[i])
                .count();
            assert_eq!(differing, 0, "level {l}: smoothing differs");
        }
        let set = |f: &Features| {
            let mut points: Vec<(u32, u32)> = (0..f.len())
                .filter(|&i| f.keypoints.octave[i] == l as i32)
                .map(|i| (f.keypoints.x[i].to_bits(), f.keypoints.y[i].to_bits()))
                .collect();
            points.sort();
            points
        };
        let (c, g) = (set(&cpu_features), set(&gpu_features));
        let common = c.iter().filter(|p| g.binary_search(p).is_ok()).count();
        println!(
            "STAGE level {l}: cpu {} gpu {} keypoints, {common} in both",
            c.len(),
            g.len()
        );
    }
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn standalone_matcher_finds_the_brute_force_neighbours_and_mutual_pairs() {
    let config = OrbConfig::default();
    let query = cpu_orb(&config, &load("graf1.png")).descriptors;
    let train = cpu_orb(&config, &load("graf3.png")).descriptors;
    let mut matcher = orbsift::cuda::CudaHammingMatcher::new(None).unwrap();
    let forward = matcher.knn2(&query, &train, false).unwrap();
    let mutual = matcher.knn2(&query, &train, true).unwrap();
    let nearest = |q: &[u8], set: &orbsift::Descriptors| {
        let mut d: Vec<(u64, usize)> = set
            .iter()
            .enumerate()
            .map(|(j, t)| (u64::from(differing_bits(q, t)), j))
            .collect();
        d.sort();
        d
    };
    let mut kept = 0;
    for (i, q) in query.iter().enumerate() {
        let d = nearest(q, &train);
        let m = forward[i];
        assert_eq!(
            (m.best_index as usize, m.best as u64, m.second as u64),
            (d[0].1, d[0].0, d[1].0),
            "query {i}"
        );
        let back = nearest(train.get(d[0].1), &query)[0].1;
        let expected = if back == i { d[0].1 as i32 } else { -1 };
        assert_eq!(mutual[i].best_index, expected, "query {i} mutual");
        kept += usize::from(expected >= 0);
    }
    assert!(
        kept > 50,
        "only {kept} mutual matches between graf1 and graf3"
    );
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn cuda_matcher_gives_the_cpu_matchers_matches() {
    let features = |name: &str| cpu_orb(&OrbConfig::default(), &load(name));
    let (a, b) = (features("graf1.png"), features("graf3.png"));
    // A single train descriptor: no second best, so no ratio test.
    let one = |f: &Features| {
        let mut single = f.clone();
        single.keypoints.clear();
        let k = &f.keypoints;
        single.keypoints.push(
            k.x[0],
            k.y[0],
            k.size[0],
            k.angle[0],
            k.response[0],
            k.octave[0],
        );
        single
            .descriptors
            .data
            .truncate(single.descriptors.kind.bytes());
        single
    };
    let settings = [(0.8, true, 0.0), (1.0, false, 0.0), (0.9, false, 40.0)];
    for (ratio, cross_check, max_distance) in settings {
        let mut config = Config::default();
        config.matching.ratio = ratio;
        config.matching.cross_check = cross_check;
        config.matching.max_distance = max_distance;
        config.backend = Backend::Cpu;
        let mut on_cpu = orbsift::create_matcher(&config).unwrap();
        config.backend = Backend::Cuda;
        let mut on_gpu = orbsift::create_matcher(&config).unwrap();
        for (query, train) in [(&a, &b), (&b, &a), (&a, &one(&b))] {
            let expected = on_cpu.match_features(query, train).unwrap();
            let got = on_gpu.match_features(query, train).unwrap();
            println!(
                "MATCH ratio {ratio} cross-check {cross_check} max {max_distance}: {} of {} queries matched",
                expected.len(),
                query.len()
            );
            assert!(train.len() == 1 || expected.len() > 50);
            assert_eq!(got, expected, "ratio {ratio} cross-check {cross_check}");
        }
    }
}

/// `scene`'s top-left `tile` x `tile` pixels repeated over `width` x `height`, starting
/// `shift` pixels into the tile: level 0's keypoints come in twins with equal
/// descriptors, so both directions of a search meet ties at their best distance.
fn tiled(
    scene: &GrayImage,
    tile: usize,
    shift: usize,
    (width, height): (usize, usize),
) -> GrayImage {
    let data = (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .map(|(x, y)| scene.row((y + shift) % tile)[(x + shift) % tile])
        .collect();
    GrayImage::new(width, height, data).expect("tiled frame")
}

/// The matches resident on the GPU (the forward search and, for a query frame, the
/// backward one fused into `orb_describe`; for a train frame the slot's own search) are
/// the CPU matcher's on the same descriptors, temporal and stereo in both arrival
/// orders, with and without the cross-check and the ratio test, ties included.
#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn resident_matches_equal_the_cpu_matcher_on_tied_descriptors() {
    let scene = resized(&load("graf1.png"), (640, 480));
    let size = (640, 480);
    let frames = [
        tiled(&scene, 96, 0, size),
        tiled(&scene, 96, 5, size),
        scene.clone(),
        tiled(&scene, 96, 0, size),
        resized(&load("graf3.png"), (640, 480)),
    ];
    let settings = [(0.8, true), (1.0, true), (1.0, false)];
    for (ratio, cross_check) in settings {
        let config = MatchConfig {
            ratio,
            cross_check,
            max_distance: 0.0,
        };
        let what = format!("ratio {ratio} cross-check {cross_check}");
        let mut cpu = BruteForceMatcher::new(config.clone());
        let mut gpu =
            CudaOrbExtractor::new(OrbConfig::default(), MemoryMode::Device, None).unwrap();
        assert!(gpu.match_resident(Some(&config)).unwrap());
        let mut extract = |residency, frame| {
            gpu.set_residency(residency);
            let features = gpu.extract(frame).expect("extract");
            (features, gpu.resident_matches())
        };
        let mut previous: Option<Features> = None;
        for (i, frame) in frames.iter().enumerate() {
            let (features, got) = extract(Residency::PREVIOUS, frame);
            if i == 0 {
                let distinct: HashSet<&[u8]> = features.descriptors.iter().collect();
                assert!(
                    distinct.len() + 100 < features.len(),
                    "{what}: the tiled frame's keypoints have twins"
                );
            }
            match &previous {
                None => assert!(got.is_none(), "{what}: the first frame has no matches"),
                Some(train) => {
                    let expected = cpu.match_features(&features, train).unwrap();
                    assert!(!expected.is_empty(), "{what}: temporal frame {i} matches");
                    assert_eq!(
                        got.expect("matches"),
                        expected,
                        "{what}: temporal frame {i}"
                    );
                }
            }
            previous = Some(features);
        }
        // Stereo pairs (frame k left, frame k + 1 right), the left frame first in even
        // pairs and the right one first in odd ones: each frame is matched with the
        // other camera's latest (the left frame the query), the last temporal frame
        // standing for the first left one.
        let (mut left, mut right) = (previous, None::<Features>);
        for (k, pair) in frames.windows(2).enumerate() {
            let mut order = [(Residency::LEFT, &pair[0]), (Residency::RIGHT, &pair[1])];
            if k % 2 == 1 {
                order.reverse();
            }
            for (residency, frame) in order {
                let (features, got) = extract(residency, frame);
                let expected = if residency.frame_is_query {
                    right
                        .as_ref()
                        .map(|r| cpu.match_features(&features, r).unwrap())
                } else {
                    left.as_ref()
                        .map(|l| cpu.match_features(l, &features).unwrap())
                };
                assert_eq!(got, expected, "{what}: stereo pair {k}, {residency:?}");
                if residency.frame_is_query {
                    left = Some(features);
                } else {
                    right = Some(features);
                }
            }
        }
    }
}
