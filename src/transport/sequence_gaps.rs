//! Samples lost inside the DDS stack, seen as gaps in each publisher's sequence numbers:
//! a best-effort sample that missed a fragment, or one the reader's keep-last history
//! replaced before the node took it.

use std::collections::HashMap;

/// Publishers followed at once; beyond it the least recently heard one is forgotten
/// (its next sample then starts a new count instead of being compared).
const MAX_PUBLISHERS: usize = 64;

/// The last sequence number of each publisher.
#[derive(Default)]
pub struct SequenceGaps<P> {
    last: HashMap<P, (i64, u64)>,
    heard: u64,
}

impl<P: std::hash::Hash + Eq + Clone> SequenceGaps<P> {
    /// Notes sample `sequence` of `publisher`; returns how many of its samples were
    /// skipped since the previous one (0 for the first sample, or for one that is not
    /// newer: a publisher that restarted).
    pub fn observe(&mut self, publisher: &P, sequence: i64) -> u64 {
        self.heard += 1;
        let heard = self.heard;
        if let Some((last, when)) = self.last.get_mut(publisher) {
            let skipped = sequence.saturating_sub(*last).saturating_sub(1).max(0) as u64;
            *last = sequence;
            *when = heard;
            return skipped;
        }
        if self.last.len() >= MAX_PUBLISHERS {
            let oldest = self
                .last
                .iter()
                .min_by_key(|(_, (_, when))| *when)
                .map(|(p, _)| p.clone());
            if let Some(oldest) = oldest {
                self.last.remove(&oldest);
            }
        }
        self.last.insert(publisher.clone(), (sequence, heard));
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_counted_per_publisher() {
        let mut gaps = SequenceGaps::default();
        assert_eq!(gaps.observe(&'a', 1), 0);
        assert_eq!(gaps.observe(&'b', 40), 0);
        assert_eq!(gaps.observe(&'a', 2), 0);
        assert_eq!(gaps.observe(&'a', 5), 2);
        assert_eq!(gaps.observe(&'b', 41), 0);
        assert_eq!(gaps.observe(&'b', 50), 8);
    }

    #[test]
    fn a_restarted_publisher_counts_no_gap() {
        let mut gaps = SequenceGaps::default();
        gaps.observe(&'a', 100);
        assert_eq!(gaps.observe(&'a', 1), 0);
        assert_eq!(gaps.observe(&'a', 3), 1);
    }

    #[test]
    fn memory_stays_bounded_with_many_publishers() {
        let mut gaps = SequenceGaps::default();
        for publisher in 0..10 * MAX_PUBLISHERS {
            gaps.observe(&publisher, 1);
        }
        assert_eq!(gaps.last.len(), MAX_PUBLISHERS);
        // The most recent publishers are still followed.
        assert_eq!(gaps.observe(&(10 * MAX_PUBLISHERS - 1), 3), 1);
    }
}
