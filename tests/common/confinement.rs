//! `--sm-limit` must confine the work with a green context, not only size the grids.

use orbsift::Extractor;

/// Panics unless `extractor` runs in a green context of exactly `sms` SMs (its device
/// label says how it is confined: `Gpu::label`).
pub fn assert_green_context(extractor: &dyn Extractor, sms: u32) {
    let label = extractor.device_name();
    assert!(
        label.ends_with(&format!("({sms} SMs, green context)")),
        "not confined to {sms} SMs by a green context: {label}"
    );
}
