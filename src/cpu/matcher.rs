//! Brute-force matching: the two nearest train descriptors of every query, Lowe's
//! ratio test, a mutual cross-check and an optional distance limit.
//!
//! Distances are integers while searching (Hamming bits for `orb256`, squared L2 for
//! `sift128u8`) so ties are exact; the lowest index wins a tie, which makes the result
//! independent of the thread count.

use rayon::prelude::*;

use crate::config::MatchConfig;
use crate::error::{Error, Result};
use crate::extractor::Matcher;
use crate::types::{DescriptorKind, Descriptors, Features, Match};

/// Matches every query descriptor against all train descriptors, in parallel over queries.
pub struct BruteForceMatcher {
    config: MatchConfig,
}

impl BruteForceMatcher {
    pub fn new(config: MatchConfig) -> Self {
        Self { config }
    }
}

impl Matcher for BruteForceMatcher {
    fn match_features(&mut self, query: &Features, train: &Features) -> Result<Vec<Match>> {
        let (q, t) = (&query.descriptors, &train.descriptors);
        if q.kind != t.kind {
            return Err(Error::DescriptorMismatch {
                query: q.kind.name().into(),
                train: t.kind.name().into(),
            });
        }
        Ok(match q.kind {
            DescriptorKind::Orb256 => self.match_with(q, t, hamming, |d| d as f32),
            DescriptorKind::Sift128U8 => {
                self.match_with(q, t, l2_squared, |d| (d as f64).sqrt() as f32)
            }
        })
    }
}

/// The nearest and second-nearest candidates of one descriptor.
struct Nearest {
    index: u32,
    best: u32,
    /// `None` when there was a single candidate.
    second: Option<u32>,
}

impl BruteForceMatcher {
    /// `distance` is the exact integer metric, `report` turns it into the distance
    /// written in a [`Match`] (and compared by the ratio test and `max_distance`).
    fn match_with(
        &self,
        query: &Descriptors,
        train: &Descriptors,
        distance: impl Fn(&[u8], &[u8]) -> u32 + Sync,
        report: impl Fn(u32) -> f32 + Sync,
    ) -> Vec<Match> {
        if query.is_empty() || train.is_empty() {
            return Vec::new();
        }
        // Each train descriptor's nearest query, needed only for the cross-check.
        let train_best: Vec<u32> = if self.config.cross_check {
            train
                .data
                .par_chunks_exact(train.kind.bytes())
                .map(|t| nearest(t, query, &distance).index)
                .collect()
        } else {
            Vec::new()
        };
        let ratio = self.config.ratio;
        let max_distance = self.config.max_distance;
        query
            .data
            .par_chunks_exact(query.kind.bytes())
            .enumerate()
            .filter_map(|(i, q)| {
                let near = nearest(q, train, &distance);
                let best = report(near.best);
                // A ratio of 1 or more disables the test (config.rs documents 1 as "off").
                let passes_ratio = ratio >= 1.0
                    || near
                        .second
                        .is_none_or(|second| (best as f64) < ratio * report(second) as f64);
                let mutual =
                    !self.config.cross_check || train_best[near.index as usize] == i as u32;
                let close = max_distance <= 0.0 || best as f64 <= max_distance;
                (passes_ratio && mutual && close).then_some(Match {
                    query: i as u32,
                    train: near.index,
                    distance: best,
                })
            })
            .collect()
    }
}

/// The two nearest of `candidates` to `probe`; on equal distances the lower index wins.
/// `candidates` must not be empty.
fn nearest(
    probe: &[u8],
    candidates: &Descriptors,
    distance: &impl Fn(&[u8], &[u8]) -> u32,
) -> Nearest {
    let (mut index, mut best, mut second) = (0, u32::MAX, u32::MAX);
    for (j, candidate) in candidates.iter().enumerate() {
        let d = distance(probe, candidate);
        if d < best {
            (index, best, second) = (j as u32, d, best);
        } else if d < second {
            second = d;
        }
    }
    Nearest {
        index,
        best,
        second: (candidates.len() > 1).then_some(second),
    }
}

/// Hamming distance of two `orb256` descriptors, 64 bits at a time.
fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.chunks_exact(8)
        .zip(b.chunks_exact(8))
        .map(|(x, y)| (word(x) ^ word(y)).count_ones())
        .sum()
}

fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("chunks_exact(8) yields 8 bytes"))
}

/// Squared L2 distance of two `sift128u8` descriptors (at most 128 * 255^2, fits u32).
fn l2_squared(a: &[u8], b: &[u8]) -> u32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x as i32 - y as i32;
            (d * d) as u32
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Keypoints;
    use proptest::prelude::{Rng, RngExt};
    use proptest::test_runner::{RngAlgorithm, TestRng};

    fn rng(seed: u8) -> TestRng {
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32])
    }

    fn random_descriptors(rng: &mut TestRng, kind: DescriptorKind, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                let mut d = vec![0u8; kind.bytes()];
                rng.fill_bytes(&mut d);
                d
            })
            .collect()
    }

    /// Features holding `descriptors` (keypoints are irrelevant to matching).
    fn features(kind: DescriptorKind, descriptors: &[Vec<u8>]) -> Features {
        let mut keypoints = Keypoints::with_capacity(descriptors.len());
        for _ in descriptors {
            keypoints.push(0.0, 0.0, 31.0, 0.0, 0.0, 0);
        }
        Features {
            width: 1,
            height: 1,
            keypoints,
            descriptors: Descriptors {
                kind,
                data: descriptors.concat(),
            },
        }
    }

    fn flip_bits(d: &[u8], bits: impl IntoIterator<Item = usize>) -> Vec<u8> {
        let mut out = d.to_vec();
        for bit in bits {
            out[bit / 8] ^= 1 << (bit % 8);
        }
        out
    }

    fn matcher(ratio: f64, cross_check: bool, max_distance: f64) -> BruteForceMatcher {
        BruteForceMatcher::new(MatchConfig {
            ratio,
            cross_check,
            max_distance,
            ..MatchConfig::default()
        })
    }

    fn run(
        m: &mut BruteForceMatcher,
        kind: DescriptorKind,
        q: &[Vec<u8>],
        t: &[Vec<u8>],
    ) -> Vec<Match> {
        m.match_features(&features(kind, q), &features(kind, t))
            .unwrap()
    }

    /// Train descriptors, and queries that are a shuffled copy with `flips[i]` bits of
    /// query `i` flipped: query `i`'s true match is `perm[i]` at distance `flips[i]`.
    struct Shuffled {
        train: Vec<Vec<u8>>,
        query: Vec<Vec<u8>>,
        perm: Vec<usize>,
        flips: Vec<usize>,
    }

    fn shuffled(seed: u8, n: usize) -> Shuffled {
        let mut rng = rng(seed);
        let train = random_descriptors(&mut rng, DescriptorKind::Orb256, n);
        let mut perm: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            perm.swap(i, rng.random_range(0..=i));
        }
        let flips: Vec<usize> = (0..n).map(|_| rng.random_range(0..=12)).collect();
        let query = perm
            .iter()
            .zip(&flips)
            .map(|(&j, &k)| flip_bits(&train[j], 0..k))
            .collect();
        Shuffled {
            train,
            query,
            perm,
            flips,
        }
    }

    #[test]
    fn finds_the_shuffled_copies_with_their_exact_hamming_distance() {
        let s = shuffled(1, 500);
        let matches = run(
            &mut matcher(0.8, true, 0.0),
            DescriptorKind::Orb256,
            &s.query,
            &s.train,
        );
        // Random 256-bit strings lie ~128 bits apart, so every true pair passes.
        assert_eq!(matches.len(), 500);
        for (i, m) in matches.iter().enumerate() {
            assert_eq!(m.query as usize, i);
            assert_eq!(m.train as usize, s.perm[i]);
            assert_eq!(m.distance, s.flips[i] as f32);
        }
    }

    #[test]
    fn max_distance_keeps_exactly_the_close_pairs() {
        let s = shuffled(2, 300);
        let matches = run(
            &mut matcher(0.8, true, 5.0),
            DescriptorKind::Orb256,
            &s.query,
            &s.train,
        );
        let expected: Vec<usize> = (0..300).filter(|&i| s.flips[i] <= 5).collect();
        let got: Vec<usize> = matches.iter().map(|m| m.query as usize).collect();
        assert_eq!(got, expected);
        assert!(matches.iter().all(|m| m.distance <= 5.0));
    }

    #[test]
    fn ratio_test_is_strict_at_the_boundary() {
        let mut rng = rng(3);
        let mut train = random_descriptors(&mut rng, DescriptorKind::Orb256, 20);
        // train[1] is train[0] with bits 0..9 flipped; a query with bits 0..k of
        // train[0] flipped lies k from train[0] and 9 - k from train[1].
        train[1] = flip_bits(&train[0], 0..9);
        let query_at = |k: usize| vec![flip_bits(&train[0], 0..k)];
        let kept = |ratio: f64, k: usize| {
            !run(
                &mut matcher(ratio, false, 0.0),
                DescriptorKind::Orb256,
                &query_at(k),
                &train,
            )
            .is_empty()
        };
        assert!(kept(0.8, 3), "3 < 0.8 * 6");
        assert!(!kept(0.8, 4), "4 < 0.8 * 5 is false: strict");
        assert!(kept(0.81, 4), "4 < 0.81 * 5");
        assert!(!kept(0.5, 4));
        assert!(kept(1.0, 4), "ratio 1 disables the test");
    }

    #[test]
    fn cross_check_keeps_only_mutual_best_pairs() {
        let mut rng = rng(4);
        let train = random_descriptors(&mut rng, DescriptorKind::Orb256, 30);
        // Both queries are nearest to train[7]; train[7] is nearest to query 1.
        let query = vec![flip_bits(&train[7], 0..6), flip_bits(&train[7], 100..102)];
        let both = run(
            &mut matcher(0.8, false, 0.0),
            DescriptorKind::Orb256,
            &query,
            &train,
        );
        assert_eq!(
            both.iter().map(|m| (m.query, m.train)).collect::<Vec<_>>(),
            vec![(0, 7), (1, 7)]
        );
        let mutual = run(
            &mut matcher(0.8, true, 0.0),
            DescriptorKind::Orb256,
            &query,
            &train,
        );
        assert_eq!(
            mutual,
            vec![Match {
                query: 1,
                train: 7,
                distance: 2.0
            }]
        );
    }

    #[test]
    fn ties_go_to_the_lowest_index_on_both_sides() {
        let mut rng = rng(5);
        let mut train = random_descriptors(&mut rng, DescriptorKind::Orb256, 10);
        train[7] = train[3].clone();
        let probe = flip_bits(&train[3], [17]);
        // Two equally near train candidates: a ratio below 1 rejects the query,
        // ratio 1 takes the lower index.
        assert!(run(
            &mut matcher(0.8, false, 0.0),
            DescriptorKind::Orb256,
            std::slice::from_ref(&probe),
            &train
        )
        .is_empty());
        let m = run(
            &mut matcher(1.0, false, 0.0),
            DescriptorKind::Orb256,
            std::slice::from_ref(&probe),
            &train,
        );
        assert_eq!((m[0].train, m[0].distance), (3, 1.0));
        // Two identical queries: train[3]'s mutual partner is the lower query index.
        let mut query = random_descriptors(&mut rng, DescriptorKind::Orb256, 6);
        query[2] = probe.clone();
        query[5] = probe;
        let m = run(
            &mut matcher(1.0, true, 0.0),
            DescriptorKind::Orb256,
            &query,
            &train,
        );
        // (Random queries pair up with random trains too: ratio 1 keeps every mutual pair.)
        let involving_ties: Vec<(u32, u32)> = m
            .iter()
            .map(|m| (m.query, m.train))
            .filter(|&(q, t)| [2, 5].contains(&q) || [3, 7].contains(&t))
            .collect();
        assert_eq!(involving_ties, vec![(2, 3)]);
    }

    #[test]
    fn empty_sets_give_no_matches_and_a_single_candidate_passes_the_ratio_test() {
        let mut rng = rng(6);
        let some = random_descriptors(&mut rng, DescriptorKind::Orb256, 4);
        let mut m = matcher(0.8, true, 0.0);
        assert!(run(&mut m, DescriptorKind::Orb256, &[], &some).is_empty());
        assert!(run(&mut m, DescriptorKind::Orb256, &some, &[]).is_empty());
        assert!(run(&mut m, DescriptorKind::Orb256, &[], &[]).is_empty());
        let one = run(&mut m, DescriptorKind::Orb256, &some[..1], &some[2..3]);
        assert_eq!(one.len(), 1);
        assert_eq!((one[0].query, one[0].train), (0, 0));
    }

    #[test]
    fn sift_descriptors_match_by_euclidean_distance() {
        let mut rng = rng(7);
        let train = random_descriptors(&mut rng, DescriptorKind::Sift128U8, 200);
        // Query i is train[199 - i] with small per-bin noise of known size.
        let mut expected = Vec::new();
        let query: Vec<Vec<u8>> = (0..200)
            .map(|i| {
                let mut d = train[199 - i].clone();
                let mut squared = 0.0f64;
                for b in d.iter_mut().take(16) {
                    let noise = rng.random_range(0..=6u8);
                    *b = if *b >= 128 { *b - noise } else { *b + noise };
                    squared += f64::from(noise).powi(2);
                }
                expected.push(squared.sqrt() as f32);
                d
            })
            .collect();
        let matches = run(
            &mut matcher(0.8, true, 0.0),
            DescriptorKind::Sift128U8,
            &query,
            &train,
        );
        assert_eq!(matches.len(), 200);
        for (i, m) in matches.iter().enumerate() {
            assert_eq!((m.query as usize, m.train as usize), (i, 199 - i));
            assert!(
                (m.distance - expected[i]).abs() < 1e-4,
                "{} vs {}",
                m.distance,
                expected[i]
            );
        }
    }

    #[test]
    fn different_descriptor_kinds_are_refused() {
        let mut rng = rng(8);
        let orb = features(
            DescriptorKind::Orb256,
            &random_descriptors(&mut rng, DescriptorKind::Orb256, 3),
        );
        let sift = features(
            DescriptorKind::Sift128U8,
            &random_descriptors(&mut rng, DescriptorKind::Sift128U8, 3),
        );
        let err = matcher(0.8, true, 0.0)
            .match_features(&orb, &sift)
            .unwrap_err();
        assert!(matches!(err, Error::DescriptorMismatch { .. }), "{err}");
        assert!(err.to_string().contains("orb256") && err.to_string().contains("sift128u8"));
    }
}
