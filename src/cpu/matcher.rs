//! Brute-force matching: the two nearest train descriptors of every query, Lowe's
//! ratio test, a mutual cross-check and an optional distance limit.
//!
//! Distances are integers while searching (Hamming bits for `orb256`, squared L2 for
//! `sift128u8`) so ties are exact; the lowest index wins a tie, which makes the result
//! independent of the thread count.

use rayon::prelude::*;

use crate::config::MatchConfig;
use crate::error::Result;
use crate::extractor::{check_same_kind, Matcher};
use crate::spec::matching::{accept_match, l2_distance};
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
        check_same_kind(q.kind, t.kind)?;
        Ok(match q.kind {
            DescriptorKind::Orb256 => self.match_with(q, t, &Hamming::new()),
            DescriptorKind::Sift128U8 => self.match_with(q, t, &L2),
        })
    }
}

/// An exact integer distance between descriptors of one kind.
trait Metric: Sync {
    /// The two nearest of `candidates` to `probe`; on equal distances the lower index
    /// wins. `candidates` must not be empty. `seen(j, d)` is told every distance.
    fn nearest(
        &self,
        probe: &[u8],
        candidates: &Descriptors,
        seen: impl FnMut(usize, u32),
    ) -> Nearest;

    /// The distance written in a [`Match`] and compared by the ratio test and
    /// `max_distance`.
    fn report(&self, raw: u32) -> f32;
}

/// Hamming distance of `orb256` descriptors, 64 bits at a time.
struct Hamming {
    /// x86-64's baseline has no POPCNT instruction; with it the search runs about four
    /// times faster, so it is used where the CPU has it.
    #[cfg(target_arch = "x86_64")]
    popcnt: bool,
}

impl Hamming {
    fn new() -> Self {
        Self {
            #[cfg(target_arch = "x86_64")]
            popcnt: std::arch::is_x86_feature_detected!("popcnt"),
        }
    }
}

impl Metric for Hamming {
    fn nearest(
        &self,
        probe: &[u8],
        candidates: &Descriptors,
        seen: impl FnMut(usize, u32),
    ) -> Nearest {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: `popcnt` is only true when the CPU reported POPCNT at run time.
            return unsafe { nearest_hamming_popcnt(probe, candidates, seen) };
        }
        nearest(probe, candidates, hamming, seen)
    }

    fn report(&self, raw: u32) -> f32 {
        raw as f32
    }
}

/// [`nearest`] by Hamming distance, compiled with POPCNT.
///
/// # Safety
/// The CPU must support POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn nearest_hamming_popcnt(
    probe: &[u8],
    candidates: &Descriptors,
    seen: impl FnMut(usize, u32),
) -> Nearest {
    nearest(probe, candidates, hamming, seen)
}

/// Euclidean distance of `sift128u8` descriptors, searched as its exact square.
struct L2;

impl Metric for L2 {
    fn nearest(
        &self,
        probe: &[u8],
        candidates: &Descriptors,
        seen: impl FnMut(usize, u32),
    ) -> Nearest {
        nearest(probe, candidates, l2_squared, seen)
    }

    fn report(&self, raw: u32) -> f32 {
        l2_distance(raw)
    }
}

/// The nearest and second-nearest candidates of one descriptor.
struct Nearest {
    index: u32,
    best: u32,
    /// `None` when there was a single candidate.
    second: Option<u32>,
}

/// Per train descriptor, its nearest query so far as `distance << 32 | query index`:
/// one integer `min` per pair keeps the nearest, preferring the lower index on ties.
type NearestQueries = Vec<u64>;

fn distance_and_index(distance: u32, index: u32) -> u64 {
    (distance as u64) << 32 | index as u64
}

impl BruteForceMatcher {
    /// One pass over all pairs serves both directions: while a query looks for its two
    /// nearest train descriptors, each train descriptor keeps its nearest query (in a
    /// table per rayon work chunk, merged at the end), so the cross-check costs no
    /// second pass.
    fn match_with(
        &self,
        query: &Descriptors,
        train: &Descriptors,
        metric: &impl Metric,
    ) -> Vec<Match> {
        if query.is_empty() || train.is_empty() {
            return Vec::new();
        }
        let cross_check = self.config.cross_check;
        let fresh_table = || -> NearestQueries {
            if cross_check {
                vec![u64::MAX; train.len()]
            } else {
                Vec::new()
            }
        };
        let (mut kept, nearest_queries) = query
            .data
            .par_chunks_exact(query.kind.bytes())
            .enumerate()
            // Chunks of queries large enough that the per-chunk table is amortised.
            .with_min_len(64)
            .fold(
                || (Vec::new(), fresh_table()),
                |(mut kept, mut table), (i, q)| {
                    let i = i as u32;
                    let near = metric.nearest(q, train, |j, d| {
                        if cross_check {
                            table[j] = table[j].min(distance_and_index(d, i));
                        }
                    });
                    if let Some(m) = self.accept(i, &near, metric) {
                        kept.push(m);
                    }
                    (kept, table)
                },
            )
            .reduce(
                || (Vec::new(), fresh_table()),
                |(mut kept, mut table), (other_kept, other_table)| {
                    kept.extend(other_kept);
                    for (mine, theirs) in table.iter_mut().zip(other_table) {
                        *mine = (*mine).min(theirs);
                    }
                    (kept, table)
                },
            );
        if cross_check {
            kept.retain(|m| nearest_queries[m.train as usize] as u32 == m.query);
        }
        kept.sort_unstable_by_key(|m| m.query);
        kept
    }

    /// The match of query `i` if it passes the ratio test and `max_distance`.
    fn accept(&self, i: u32, near: &Nearest, metric: &impl Metric) -> Option<Match> {
        accept_match(
            &self.config,
            i,
            near.index,
            metric.report(near.best),
            near.second.map(|second| metric.report(second)),
        )
    }
}

/// [`Metric::nearest`] for the metric `distance`. Inlined so that it compiles with the
/// target features of its caller.
#[inline(always)]
fn nearest(
    probe: &[u8],
    candidates: &Descriptors,
    distance: impl Fn(&[u8], &[u8]) -> u32,
    mut seen: impl FnMut(usize, u32),
) -> Nearest {
    let (mut index, mut best, mut second) = (0, u32::MAX, u32::MAX);
    for (j, candidate) in candidates.iter().enumerate() {
        let d = distance(probe, candidate);
        seen(j, d);
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
#[inline(always)]
fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.chunks_exact(8)
        .zip(b.chunks_exact(8))
        .map(|(x, y)| (word(x) ^ word(y)).count_ones())
        .sum()
}

#[inline(always)]
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
    use crate::error::{Error, FeaturesError};
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

    fn run_orb(m: &mut BruteForceMatcher, q: &[Vec<u8>], t: &[Vec<u8>]) -> Vec<Match> {
        run(m, DescriptorKind::Orb256, q, t)
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
        let matches = run_orb(&mut matcher(0.8, true, 0.0), &s.query, &s.train);
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
        let matches = run_orb(&mut matcher(0.8, true, 5.0), &s.query, &s.train);
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
            !run_orb(&mut matcher(ratio, false, 0.0), &query_at(k), &train).is_empty()
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
        let both = run_orb(&mut matcher(0.8, false, 0.0), &query, &train);
        assert_eq!(
            both.iter().map(|m| (m.query, m.train)).collect::<Vec<_>>(),
            vec![(0, 7), (1, 7)]
        );
        let mutual = run_orb(&mut matcher(0.8, true, 0.0), &query, &train);
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
        assert!(run_orb(
            &mut matcher(0.8, false, 0.0),
            std::slice::from_ref(&probe),
            &train
        )
        .is_empty());
        let m = run_orb(
            &mut matcher(1.0, false, 0.0),
            std::slice::from_ref(&probe),
            &train,
        );
        assert_eq!((m[0].train, m[0].distance), (3, 1.0));
        // Two identical queries: train[3]'s mutual partner is the lower query index.
        let mut query = random_descriptors(&mut rng, DescriptorKind::Orb256, 6);
        query[2] = probe.clone();
        query[5] = probe;
        let m = run_orb(&mut matcher(1.0, true, 0.0), &query, &train);
        // (Random queries pair up with random trains too: ratio 1 keeps every mutual pair.)
        let involving_ties: Vec<(u32, u32)> = m
            .iter()
            .map(|m| (m.query, m.train))
            .filter(|&(q, t)| [2, 5].contains(&q) || [3, 7].contains(&t))
            .collect();
        assert_eq!(involving_ties, vec![(2, 3)]);
    }

    #[test]
    fn results_do_not_depend_on_threads_or_work_chunks() {
        let mut s = shuffled(9, 600);
        // A duplicate query far from the original (another work chunk): the lower index
        // keeps the train descriptor both share.
        s.query[580] = s.query[3].clone();
        let in_pool = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| run_orb(&mut matcher(0.8, true, 0.0), &s.query, &s.train))
        };
        let one = in_pool(1);
        assert_eq!(one, in_pool(4));
        assert!(one
            .iter()
            .any(|m| m.query == 3 && m.train as usize == s.perm[3]));
        assert!(one.iter().all(|m| m.query != 580));
        assert!(one.windows(2).all(|w| w[0].query < w[1].query));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn popcnt_and_portable_hamming_agree() {
        assert!(
            std::arch::is_x86_feature_detected!("popcnt"),
            "this test needs a CPU with POPCNT to compare both paths"
        );
        let s = shuffled(10, 400);
        let (q, t) = (
            features(DescriptorKind::Orb256, &s.query),
            features(DescriptorKind::Orb256, &s.train),
        );
        let m = matcher(0.9, true, 0.0);
        let portable = m.match_with(&q.descriptors, &t.descriptors, &Hamming { popcnt: false });
        let fast = m.match_with(&q.descriptors, &t.descriptors, &Hamming { popcnt: true });
        assert_eq!(portable.len(), 400);
        assert_eq!(portable, fast);
    }

    #[test]
    fn empty_sets_give_no_matches_and_a_single_candidate_passes_the_ratio_test() {
        let mut rng = rng(6);
        let some = random_descriptors(&mut rng, DescriptorKind::Orb256, 4);
        let mut m = matcher(0.8, true, 0.0);
        assert!(run_orb(&mut m, &[], &some).is_empty());
        assert!(run_orb(&mut m, &some, &[]).is_empty());
        assert!(run_orb(&mut m, &[], &[]).is_empty());
        let one = run_orb(&mut m, &some[..1], &some[2..3]);
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
        assert!(
            matches!(
                err,
                Error::Features(FeaturesError::DescriptorMismatch { .. })
            ),
            "{err}"
        );
        assert!(err.to_string().contains("orb256") && err.to_string().contains("sift128u8"));
    }
}
