//! The CPU reference ORB on real images (tests/data): geometry of the output,
//! determinism across thread counts, and rotation of the descriptor.

mod common;

use orbsift::config::{Distribution, OrbScore};
use orbsift::cpu::orb::OrbExtractor;
use orbsift::spec::pyramid::level_geometry;
use orbsift::{Extractor, GrayImage, Keypoints, OrbConfig};

use common::frames::load;
use common::orb::{cpu_orb, differing_bits};

/// Every combination of score and distribution.
fn configs() -> Vec<OrbConfig> {
    let mut all = Vec::new();
    for score in [OrbScore::Harris, OrbScore::Fast] {
        for distribution in [Distribution::Grid, Distribution::TopResponse] {
            all.push(OrbConfig {
                score,
                distribution,
                ..OrbConfig::default()
            });
        }
    }
    all
}

#[test]
fn keypoints_lie_in_their_levels_detection_area() {
    for name in ["graf1.png", "box.pgm", "leuvenA.jpg", "basketball1.png"] {
        let image = load(name);
        for config in configs() {
            let f = cpu_orb(&config, &image);
            let what = format!("{name} {:?}/{:?}", config.score, config.distribution);
            let n = f.len();
            assert!(n > 0, "{what}: no keypoints");
            assert!(n <= config.n_features as usize, "{what}: {n} keypoints");
            assert_eq!(f.descriptors.data.len(), 32 * n, "{what}");
            let levels = level_geometry(
                image.width(),
                image.height(),
                config.n_levels,
                config.scale_factor,
            );
            let edge = config.edge_threshold as f64;
            let k = &f.keypoints;
            for i in 0..n {
                let (x, y) = (k.x[i], k.y[i]);
                assert!(x >= 0.0 && x < image.width() as f32, "{what}: x {x}");
                assert!(y >= 0.0 && y < image.height() as f32, "{what}: y {y}");
                assert!(
                    (0.0..360.0).contains(&k.angle[i]),
                    "{what}: angle {}",
                    k.angle[i]
                );
                let level = levels[k.octave[i] as usize];
                let lx = (f64::from(x) / level.scale).round();
                let ly = (f64::from(y) / level.scale).round();
                assert!(
                    lx >= edge && lx < level.width as f64 - edge,
                    "{what}: level x {lx} outside the area of a {}-wide level",
                    level.width
                );
                assert!(
                    ly >= edge && ly < level.height as f64 - edge,
                    "{what}: level y {ly}"
                );
                assert_eq!(k.size[i], 31.0 * level.scale as f32);
                if i > 0 {
                    assert!(k.octave[i] >= k.octave[i - 1], "{what}: levels in order");
                }
            }
        }
    }
}

#[test]
fn top_response_reports_responses_in_decreasing_order_per_level() {
    let image = load("graf1.png");
    for score in [OrbScore::Harris, OrbScore::Fast] {
        let config = OrbConfig {
            score,
            distribution: Distribution::TopResponse,
            ..OrbConfig::default()
        };
        let k = cpu_orb(&config, &image).keypoints;
        for i in 1..k.len() {
            if k.octave[i] == k.octave[i - 1] {
                assert!(k.response[i] <= k.response[i - 1], "{score:?} at {i}");
            }
        }
    }
}

#[test]
fn grid_spreads_keypoints_wider_than_top_response() {
    // Even coverage: more distinct 30-pixel cells of level 0 hold a keypoint.
    let image = load("leuvenA.jpg");
    let cells = |distribution| {
        let config = OrbConfig {
            distribution,
            ..OrbConfig::default()
        };
        let k = cpu_orb(&config, &image).keypoints;
        let mut occupied: Vec<(i32, i32)> = (0..k.len())
            .filter(|&i| k.octave[i] == 0)
            .map(|i| (k.x[i] as i32 / 30, k.y[i] as i32 / 30))
            .collect();
        occupied.sort_unstable();
        occupied.dedup();
        occupied.len()
    };
    let (grid, top) = (cells(Distribution::Grid), cells(Distribution::TopResponse));
    assert!(grid > top, "grid covers {grid} cells, top_response {top}");
}

#[test]
fn same_image_gives_identical_output_with_one_or_many_threads() {
    let image = load("graf3.png");
    for config in configs() {
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("thread pool");
            pool.install(|| {
                let mut extractor = OrbExtractor::new(config.clone()).expect("config");
                let first = extractor.extract(&image).expect("extract");
                let again = extractor.extract(&image).expect("extract");
                assert_eq!(
                    first, again,
                    "a second frame of the same size reuses buffers"
                );
                first
            })
        };
        assert_eq!(
            run(1),
            run(4),
            "{:?}/{:?}",
            config.score,
            config.distribution
        );
    }
}

#[test]
fn a_new_image_size_reallocates_cleanly() {
    let mut extractor = OrbExtractor::new(OrbConfig::default()).expect("config");
    let (big, small) = (load("graf1.png"), load("box.pgm"));
    let first = extractor.extract(&big).expect("extract");
    extractor.extract(&small).expect("extract");
    assert_eq!(extractor.extract(&big).expect("extract"), first);
}

#[test]
fn images_too_small_for_any_level_give_no_keypoints() {
    for (w, h) in [(1, 1), (62, 500), (63, 63), (7, 300)] {
        let image = GrayImage::new(w, h, (0..w * h).map(|i| (i * 91 % 256) as u8).collect())
            .expect("image");
        let f = cpu_orb(&OrbConfig::default(), &image);
        assert!(f.len() <= 1, "{w}x{h}");
    }
}

/// Rotates by 90° clockwise, pixel for pixel: `out(x', y') = in(y', H - 1 - x')`.
fn rotate_clockwise(image: &GrayImage) -> GrayImage {
    let (w, h) = (image.width(), image.height());
    let data = (0..w * h)
        .map(|i| {
            let (xr, yr) = (i % h, i / h);
            image.get(yr, h - 1 - xr)
        })
        .collect();
    GrayImage::new(h, w, data).expect("rotated image")
}

#[test]
fn descriptors_follow_an_exact_90_degree_rotation() {
    let config = OrbConfig::default();
    let image = load("graf1.png");
    let rotated = rotate_clockwise(&image);
    let f = cpu_orb(&config, &image);
    let levels = level_geometry(
        image.width(),
        image.height(),
        config.n_levels,
        config.scale_factor,
    );
    // The same keypoints in the rotated image: level pixel (x, y) moves to
    // (H_l - 1 - y, x) and the orientation turns by 90°.
    let k = &f.keypoints;
    let mut moved = Keypoints::with_capacity(k.len());
    for i in 0..k.len() {
        let level = levels[k.octave[i] as usize];
        let lx = (f64::from(k.x[i]) / level.scale).round();
        let ly = (f64::from(k.y[i]) / level.scale).round();
        let x = (level.height as f64 - 1.0 - ly) * level.scale;
        let y = lx * level.scale;
        let angle = (k.angle[i] + 90.0) % 360.0;
        moved.push(
            x as f32,
            y as f32,
            k.size[i],
            angle,
            k.response[i],
            k.octave[i],
        );
    }
    let mut extractor = OrbExtractor::new(config).expect("config");
    let turned = extractor
        .describe_at(&rotated, &moved)
        .expect("describe rotated");
    let distances: Vec<u32> = f
        .descriptors
        .iter()
        .zip(turned.iter())
        .map(|(a, b)| differing_bits(a, b))
        .collect();
    let mean = distances.iter().sum::<u32>() as f64 / distances.len() as f64;
    let identical = distances.iter().filter(|&&d| d == 0).count();
    assert!(
        mean <= 2.0,
        "mean Hamming distance {mean} of {}",
        distances.len()
    );
    assert!(
        identical * 2 > distances.len(),
        "only {identical} of {} descriptors identical",
        distances.len()
    );
}

#[test]
fn describe_at_reproduces_extraction_at_its_own_keypoints() {
    // Same keypoints, steering from the stored angle instead of the moments:
    // only rounding ties of the sample offsets may differ.
    let image = load("leuvenA.jpg");
    let mut extractor = OrbExtractor::new(OrbConfig::default()).expect("config");
    let f = extractor.extract(&image).expect("extract");
    let again = extractor
        .describe_at(&image, &f.keypoints)
        .expect("describe");
    let total: u32 = f
        .descriptors
        .iter()
        .zip(again.iter())
        .map(|(a, b)| differing_bits(a, b))
        .sum();
    let mean = f64::from(total) / f.len() as f64;
    assert!(mean < 0.5, "mean Hamming distance {mean}");
}

#[test]
fn describe_at_rejects_keypoints_it_cannot_describe() {
    let image = load("box.pgm");
    let mut extractor = OrbExtractor::new(OrbConfig::default()).expect("config");
    let mut bad = |x: f32, y: f32, angle: f32, octave: i32| {
        let mut k = Keypoints::default();
        k.push(x, y, 31.0, angle, 0.0, octave);
        extractor
            .describe_at(&image, &k)
            .expect_err("must be rejected")
            .to_string()
    };
    assert!(bad(2.0, 100.0, 0.0, 0).contains("inside the level"));
    assert!(bad(100.0, 100.0, 0.0, 8).contains("octave 8"));
    assert!(bad(100.0, 100.0, 0.0, -1).contains("octave -1"));
    assert!(bad(100.0, 100.0, f32::NAN, 0).contains("angle"));
    assert!(bad(f32::NAN, 100.0, 0.0, 0).contains("inside the level"));
}

#[test]
fn top_response_candidates_do_not_depend_on_the_score_map_threshold() {
    // The map at min_fast_threshold, cut at fast_threshold, gives the same NMS
    // survivors as the map built at fast_threshold (docs/orb-reference.md §2-3).
    use orbsift::cpu::candidates::{apply_threshold, local_maxima};
    use orbsift::cpu::fast::score_map;
    use orbsift::spec::grid::DetectionArea;
    let image = load("graf1.png");
    let (w, h) = (image.width(), image.height());
    let area = DetectionArea::new(w, h, 31).expect("area");
    let survivors = |map_threshold: u8| {
        let mut scores = vec![0; w * h];
        score_map(image.data(), w, map_threshold, &mut scores);
        let mut candidates = Vec::new();
        local_maxima(&scores, w, &area, &mut candidates);
        apply_threshold(&mut candidates, 20);
        candidates
    };
    let (low, high) = (survivors(7), survivors(20));
    assert!(high.len() > 100, "{} candidates", high.len());
    assert_eq!(low, high);
}

#[test]
fn stage_views_hold_what_the_stage_functions_compute() {
    use orbsift::cpu::blur::gaussian_blur;
    use orbsift::cpu::fast::score_map;
    use orbsift::cpu::orb::score_map_threshold;
    use orbsift::cpu::pyramid::Resizer;
    let image = load("graf3.png");
    let config = OrbConfig::default();
    let mut extractor = OrbExtractor::new(config.clone()).expect("config");
    let features = extractor.extract(&image).expect("extract");
    let (level0, level1) = (
        extractor.level(0).expect("level 0"),
        extractor.level(1).expect("level 1"),
    );
    assert!(level0.image.is_none(), "level 0 is the input itself");
    let (w, h) = (level1.geometry.width, level1.geometry.height);
    let mut resized = vec![0; w * h];
    Resizer::new(image.width(), image.height(), w, h).resize(
        image.data(),
        image.width(),
        &mut resized,
    );
    assert_eq!(level1.image, Some(&resized[..]));
    let mut scores = vec![0; w * h];
    score_map(&resized, w, score_map_threshold(&config), &mut scores);
    assert_eq!(level1.scores, &scores[..]);
    // The smoothed level holds the full blur on the tiles it covers, and those
    // cover the rBRIEF reach of every keypoint.
    let mut smoothed = vec![0; w * h];
    gaussian_blur(&resized, w, &mut smoothed, &mut Vec::new());
    let tiled = level1.smoothed.expect("level 1 has keypoints");
    let covered: Vec<usize> = (0..w * h)
        .filter(|&i| level1.smoothed_tiles.covers(i % w, i / w))
        .collect();
    assert!(covered.iter().all(|&i| tiled[i] == smoothed[i]));
    let reach = orbsift::spec::brief_pattern::PATTERN_REACH;
    for k in level1.keypoints {
        let (x, y) = (k.x as usize, k.y as usize);
        for (dx, dy) in [(0, 0), (reach, reach), (0, 2 * reach), (2 * reach, 0)] {
            assert!(level1.smoothed_tiles.covers(x + dx - reach, y + dy - reach));
        }
    }
    assert!(
        covered.len() < w * h,
        "graf3's level 1 is not smoothed everywhere"
    );
    let on_level1 = features
        .keypoints
        .octave
        .iter()
        .filter(|&&o| o == 1)
        .count();
    assert_eq!(level1.keypoints.len(), on_level1);
    assert_eq!(level1.descriptors.len(), 32 * on_level1);
    assert!(extractor.level(config.n_levels as usize).is_none());
}
