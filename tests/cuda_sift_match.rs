//! The CUDA L2 matcher (kernels/match/l2.cu) against the CPU `BruteForceMatcher` on real
//! SIFT descriptors: the CPU SIFT of graf1 and graf3 (tests/data). Every result must be
//! identical: same pairs, same order, same reported distances. Run by scripts/gpu-check.sh.
#![cfg(feature = "cuda")]

use std::cell::RefCell;
use std::path::Path;
use std::sync::OnceLock;

use orbsift::config::{Algorithm, Backend, MatchConfig};
use orbsift::cpu::matcher::BruteForceMatcher;
use orbsift::cpu::sift::SiftExtractor;
use orbsift::cuda::{CudaL2Matcher, CudaMatcher};
use orbsift::types::{DescriptorKind, Descriptors, Keypoints};
use orbsift::{
    Config, Error, Extractor, Features, FeaturesError, GrayImage, Match, Matcher, SiftConfig,
};

/// CPU SIFT (OpenCV defaults) of graf1 and graf3, computed once.
fn graf() -> &'static (Features, Features) {
    static GRAF: OnceLock<(Features, Features)> = OnceLock::new();
    GRAF.get_or_init(|| {
        let mut sift = SiftExtractor::new(SiftConfig::default()).expect("default config");
        let mut extract = |name: &str| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data")
                .join(name);
            let image = GrayImage::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            let features = sift.extract(&image).expect("CPU SIFT");
            assert!(
                features.len() > 1000,
                "{name}: {} keypoints",
                features.len()
            );
            features
        };
        (extract("graf1.png"), extract("graf3.png"))
    })
}

/// Features holding the descriptors `rows` of `from` (keypoints do not matter to matching).
fn subset(from: &Features, rows: impl IntoIterator<Item = usize>) -> Features {
    let bytes = from.descriptors.kind.bytes();
    let mut data = Vec::new();
    let mut keypoints = Keypoints::with_capacity(0);
    for row in rows {
        data.extend_from_slice(&from.descriptors.data[row * bytes..(row + 1) * bytes]);
        keypoints.push(0.0, 0.0, 1.0, 0.0, 0.0, 0);
    }
    Features {
        width: from.width,
        height: from.height,
        keypoints,
        descriptors: Descriptors {
            kind: from.descriptors.kind,
            data,
        },
    }
}

fn config(ratio: f64, cross_check: bool, max_distance: f64) -> MatchConfig {
    MatchConfig {
        ratio,
        cross_check,
        max_distance,
    }
}

fn gpu_matcher(config: &MatchConfig) -> CudaMatcher<CudaL2Matcher> {
    CudaMatcher::new(config.clone(), None).expect("CUDA L2 matcher")
}

fn cpu_matches(config: &MatchConfig, query: &Features, train: &Features) -> Vec<Match> {
    BruteForceMatcher::new(config.clone())
        .match_features(query, train)
        .expect("CPU matching")
}

/// The GPU's matches, asserted identical to the CPU's; returns them. The GPU matcher
/// is opened once per configuration (it opens the GPU and loads every kernel module).
fn assert_same(what: &str, config: &MatchConfig, query: &Features, train: &Features) -> Vec<Match> {
    type Opened = Vec<(MatchConfig, CudaMatcher<CudaL2Matcher>)>;
    thread_local! {
        static OPEN: RefCell<Opened> = const { RefCell::new(Vec::new()) };
    }
    let expected = cpu_matches(config, query, train);
    let got = OPEN.with_borrow_mut(|open| {
        let at = match open.iter().position(|(c, _)| c == config) {
            Some(at) => at,
            None => {
                open.push((config.clone(), gpu_matcher(config)));
                open.len() - 1
            }
        };
        open[at]
            .1
            .match_features(query, train)
            .expect("GPU matching")
    });
    assert_eq!(got.len(), expected.len(), "{what}: match count");
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!(g, e, "{what}");
    }
    println!(
        "MATCH {what}: {} x {} -> {} identical matches",
        query.len(),
        train.len(),
        got.len()
    );
    got
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn graf_matches_are_identical_both_ways_with_and_without_cross_check() {
    let (graf1, graf3) = graf();
    for (direction, query, train) in [
        ("graf1->graf3", graf1, graf3),
        ("graf3->graf1", graf3, graf1),
    ] {
        for (name, config) in [
            ("ratio 0.8, cross-check", config(0.8, true, 0.0)),
            ("ratio 0.8", config(0.8, false, 0.0)),
            ("ratio off, cross-check", config(1.0, true, 0.0)),
            ("ratio off", config(1.0, false, 0.0)),
        ] {
            let matches = assert_same(&format!("{direction} {name}"), &config, query, train);
            assert!(matches.len() > 100, "{direction} {name}: {}", matches.len());
        }
        // A limit that keeps some matches and rejects others.
        let unlimited = cpu_matches(&config(1.0, false, 0.0), query, train);
        let limited = assert_same(
            &format!("{direction} max_distance 250"),
            &config(1.0, false, 250.0),
            query,
            train,
        );
        assert!(!limited.is_empty() && limited.len() < unlimited.len());
        assert_same(
            &format!("{direction} ratio 0.9, cross-check, max_distance 250"),
            &config(0.9, true, 250.0),
            query,
            train,
        );
    }
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn ties_go_to_the_lower_index_on_both_sides_as_on_the_cpu() {
    let (graf1, graf3) = graf();
    // Every train descriptor twice: each query's best is a tie between rows j and
    // n + j, the second best equals the best, and both train rows have the same
    // nearest query.
    let n = graf3.len();
    let doubled_train = subset(graf3, (0..n).chain(0..n));
    let rejected = assert_same(
        "doubled train, ratio 0.8",
        &config(0.8, false, 0.0),
        graf1,
        &doubled_train,
    );
    assert!(
        rejected.is_empty(),
        "equal best and second never pass a ratio below 1"
    );
    for cross_check in [false, true] {
        let kept = assert_same(
            &format!("doubled train, ratio off, cross-check {cross_check}"),
            &config(1.0, cross_check, 0.0),
            graf1,
            &doubled_train,
        );
        assert!(kept.iter().all(|m| (m.train as usize) < n));
        assert!(!kept.is_empty());
    }
    // Every query twice: the cross-check keeps the lower query of each pair.
    let m = graf1.len();
    let doubled_query = subset(graf1, (0..m).chain(0..m));
    let mutual = assert_same(
        "doubled query, cross-check",
        &config(0.8, true, 0.0),
        &doubled_query,
        graf3,
    );
    assert!(!mutual.is_empty() && mutual.iter().all(|m_| (m_.query as usize) < m));
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn tile_edges_single_descriptors_and_empty_sets() {
    let (graf1, graf3) = graf();
    // Query counts around the 128-query tile, and train sets of one descriptor (no
    // second best: the ratio test passes), one tile, and one tile plus one.
    for queries in [1, 127, 128, 129, 300] {
        for trains in [1, 2, 128, 129] {
            let query = subset(graf1, 0..queries);
            let train = subset(graf3, (0..trains).map(|j| j * 7 % graf3.len()));
            for config in [config(0.8, true, 0.0), config(0.8, false, 300.0)] {
                let what = format!("{queries} x {trains}, cross-check {}", config.cross_check);
                let matches = assert_same(&what, &config, &query, &train);
                if trains == 1 && !config.cross_check {
                    assert!(matches.iter().all(|m| m.train == 0));
                }
            }
        }
    }
    let one_train = subset(graf3, [0]);
    let all_to_one = assert_same(
        "all x 1, ratio 0.8",
        &config(0.8, false, 0.0),
        graf1,
        &one_train,
    );
    assert_eq!(
        all_to_one.len(),
        graf1.len(),
        "one train descriptor: the ratio test passes"
    );
    let mutual = assert_same(
        "all x 1, cross-check",
        &config(0.8, true, 0.0),
        graf1,
        &one_train,
    );
    assert_eq!(mutual.len(), 1);

    let empty = subset(graf1, []);
    let mut matcher = gpu_matcher(&MatchConfig::default());
    for (query, train) in [(&empty, graf3), (graf1, &empty), (&empty, &empty)] {
        let matches = matcher
            .match_features(query, train)
            .expect("empty sets are fine");
        assert!(matches.is_empty());
    }
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn the_cuda_backend_matches_sift_on_the_gpu_and_refuses_other_kinds() {
    let (graf1, graf3) = graf();
    let config = Config {
        algorithm: Algorithm::Sift,
        backend: Backend::Cuda,
        ..Config::default()
    };
    let mut matcher = orbsift::create_matcher(&config).expect("CUDA SIFT matcher");
    let got = matcher.match_features(graf1, graf3).expect("GPU matching");
    assert_eq!(got, cpu_matches(&config.matching, graf1, graf3));
    assert!(!got.is_empty());

    let orb = Features {
        descriptors: Descriptors {
            kind: DescriptorKind::Orb256,
            data: vec![0; 32 * 3],
        },
        keypoints: subset(graf1, 0..3).keypoints,
        width: 1,
        height: 1,
    };
    for (query, train) in [(&orb, &orb), (&orb, graf3), (graf1, &orb)] {
        let error = matcher.match_features(query, train).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Features(FeaturesError::DescriptorMismatch { .. })
            ),
            "{error}"
        );
    }
}
