//! `orbsift bench --backend cuda`: GPU timings from events, medians over rotated inputs.

use std::fmt;

use crate::config::{MemoryMode, OrbConfig};
use crate::cuda::orb::CudaOrbExtractor;
use crate::error::Result;
use crate::extractor::Extractor;
use crate::image::GrayImage;

/// One `BENCH` line. `match_ms_median` is the cost of fused matching against a
/// resident train set of the same size: extraction with it minus extraction without.
#[derive(Clone, Debug)]
pub struct OrbBench {
    pub device: String,
    pub width: usize,
    pub height: usize,
    pub features: usize,
    pub extract_ms_median: f64,
    pub extract_ms_min: f64,
    pub upload_ms_median: f64,
    pub match_ms_median: f64,
}

impl fmt::Display for OrbBench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BENCH algo=orb backend=cuda device=\"{}\" size={}x{} features={} extract_ms_median={:.4} extract_ms_min={:.4} upload_ms_median={:.4} match_ms_median={:.4}",
            self.device,
            self.width,
            self.height,
            self.features,
            self.extract_ms_median,
            self.extract_ms_min,
            self.upload_ms_median,
            self.match_ms_median
        )
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Times `iterations` frames rotating over `frames` (all one size) after `warmup`
/// frames, first alone, then with the first frame's descriptors as resident train set.
pub fn bench_orb(
    config: &OrbConfig,
    memory: MemoryMode,
    sm_limit: Option<u32>,
    frames: &[GrayImage],
    warmup: usize,
    iterations: usize,
) -> Result<OrbBench> {
    let mut gpu = CudaOrbExtractor::new(config.clone(), memory, sm_limit)?;
    let Some(first) = frames.first() else {
        return Err(crate::error::Error::InvalidImage("no frame to time".into()));
    };
    let run = |gpu: &mut CudaOrbExtractor| -> Result<(Vec<f64>, Vec<f64>, usize)> {
        let (mut extract, mut upload, mut features) = (Vec::new(), Vec::new(), 0);
        for i in 0..warmup + iterations {
            let f = gpu.extract(&frames[i % frames.len()])?;
            if i >= warmup {
                let t = gpu.last_timing();
                extract.push(f64::from(t.extract_ms));
                upload.push(f64::from(t.upload_ms));
                features = features.max(f.len());
            }
        }
        Ok((extract, upload, features))
    };
    let (mut extract, mut upload, features) = run(&mut gpu)?;
    let train = gpu.extract(first)?;
    gpu.set_train(Some(&train.descriptors))?;
    let (mut fused, _, _) = run(&mut gpu)?;
    let extract_ms_median = median(&mut extract);
    Ok(OrbBench {
        device: format!(
            "{}{}",
            gpu.device_name(),
            sm_limit.map_or(String::new(), |n| format!(" ({n} SMs)"))
        ),
        width: first.width(),
        height: first.height(),
        features,
        extract_ms_min: extract.first().copied().unwrap_or(f64::NAN),
        extract_ms_median,
        upload_ms_median: median(&mut upload),
        match_ms_median: (median(&mut fused) - extract_ms_median).max(0.0),
    })
}
