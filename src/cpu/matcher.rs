//! PLACEHOLDER: replaced by the brute-force matcher (helper cli).
use crate::config::MatchConfig;
use crate::error::Result;
use crate::extractor::Matcher;
use crate::types::{Features, Match};

pub struct BruteForceMatcher {
    _config: MatchConfig,
}

impl BruteForceMatcher {
    pub fn new(config: MatchConfig) -> Self {
        Self { _config: config }
    }
}

impl Matcher for BruteForceMatcher {
    fn match_features(&mut self, _q: &Features, _t: &Features) -> Result<Vec<Match>> {
        todo!("matcher")
    }
}
