//! PLACEHOLDER: the CLI (helper cli).
fn main() {}
