//! Chooses the backend that runs extraction and matching.

use crate::config::{Algorithm, Backend, Config};
use crate::cpu;
use crate::error::Result;
use crate::extractor::{Extractor, Matcher};

/// The extractor for `config.algorithm` on `config.backend`.
///
/// `auto` takes the GPU when one is usable and otherwise logs one line and uses the
/// CPU; `cuda` fails with the reason when no GPU is usable.
pub fn create_extractor(config: &Config) -> Result<Box<dyn Extractor>> {
    match config.backend {
        Backend::Cpu => cpu_extractor(config),
        Backend::Cuda => cuda_extractor(config),
        Backend::Auto => match cuda_extractor(config) {
            Ok(extractor) => Ok(extractor),
            Err(reason) => {
                log::info!(
                    "CUDA backend unusable ({}): using the CPU backend",
                    reason.one_line()
                );
                cpu_extractor(config)
            }
        },
    }
}

#[cfg(feature = "cuda")]
fn cuda_extractor(config: &Config) -> Result<Box<dyn Extractor>> {
    match config.algorithm {
        Algorithm::Orb => Ok(Box::new(crate::cuda::CudaOrbExtractor::new(
            config.orb.clone(),
            config.memory,
            config.sm_limit(),
        )?)),
        Algorithm::Sift => Ok(Box::new(crate::cuda::CudaSiftExtractor::new(
            config.sift.clone(),
            config.memory,
            config.sm_limit(),
        )?)),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_extractor(_config: &Config) -> Result<Box<dyn Extractor>> {
    Err(no_cuda())
}

/// Why a build without the `cuda` feature has no CUDA extractor or matcher.
#[cfg(not(feature = "cuda"))]
fn no_cuda() -> crate::error::Error {
    crate::error::Error::Cuda(crate::error::CudaError::Unavailable(
        "this build has no CUDA backend (built without the `cuda` feature)".into(),
    ))
}

fn cpu_extractor(config: &Config) -> Result<Box<dyn Extractor>> {
    match config.algorithm {
        Algorithm::Orb => Ok(Box::new(cpu::orb::OrbExtractor::new(config.orb.clone())?)),
        Algorithm::Sift => Ok(Box::new(cpu::sift::SiftExtractor::new(
            config.sift.clone(),
        )?)),
    }
}

/// The matcher for the descriptors `config.algorithm` produces, on the backend that
/// `create_extractor` picks (`auto` falls back to the CPU as it does).
pub fn create_matcher(config: &Config) -> Result<Box<dyn Matcher>> {
    match config.backend {
        Backend::Cpu => Ok(cpu_matcher(config)),
        Backend::Cuda => cuda_matcher(config),
        Backend::Auto => Ok(cuda_matcher(config).unwrap_or_else(|_| cpu_matcher(config))),
    }
}

fn cpu_matcher(config: &Config) -> Box<dyn Matcher> {
    Box::new(cpu::matcher::BruteForceMatcher::new(
        config.matching.clone(),
    ))
}

#[cfg(feature = "cuda")]
fn cuda_matcher(config: &Config) -> Result<Box<dyn Matcher>> {
    use crate::cuda::{CudaHammingMatcher, CudaL2Matcher, CudaMatcher};
    match config.algorithm {
        Algorithm::Orb => Ok(Box::new(CudaMatcher::<CudaHammingMatcher>::new(
            config.matching.clone(),
            config.sm_limit(),
        )?)),
        Algorithm::Sift => Ok(Box::new(CudaMatcher::<CudaL2Matcher>::new(
            config.matching.clone(),
            config.sm_limit(),
        )?)),
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_matcher(_config: &Config) -> Result<Box<dyn Matcher>> {
    Err(no_cuda())
}
