//! An `Outputs` that keeps what the node publishes, for tests that drive `Node::handle`.

use std::cell::RefCell;

use orbsift::msgs::{self, DiagnosticArray, Image};
use orbsift::node::Outputs;
use orbsift::Result;

#[derive(Default)]
pub struct Recorder {
    pub features: RefCell<Vec<msgs::Features>>,
    pub matches: RefCell<Vec<msgs::Matches>>,
}

impl Outputs for Recorder {
    fn publish_features(&self, message: msgs::Features) -> Result<()> {
        self.features.borrow_mut().push(message);
        Ok(())
    }
    fn publish_matches(&self, message: msgs::Matches) -> Result<()> {
        self.matches.borrow_mut().push(message);
        Ok(())
    }
    fn publish_diagnostics(&self, _: DiagnosticArray) -> Result<()> {
        Ok(())
    }
    fn publish_debug_image(&self, _: Image) -> Result<()> {
        Ok(())
    }
    fn wants_debug_image(&self) -> bool {
        false
    }
    fn publish_image(&self, _: Image) -> Result<()> {
        Ok(())
    }
    fn features_subscribed(&self) -> bool {
        true
    }
}
