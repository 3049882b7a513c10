//! Before a plan allocates for a new frame size: the bytes it needs against the
//! device's free memory (`cuMemGetInfo`), so that a frame too large for what is left
//! of the GPU is refused with an error naming both, rather than with the driver's
//! out-of-memory partway through the plan's allocations.

use crate::error::{CudaError, Error, Result};

/// `Ok` when the device has at least `needed` bytes free for `plan`'s buffers of a
/// `width` x `height` frame, else [`CudaError::OutOfMemory`]. The caller's context is
/// current, and the plan of the previous size is already freed.
pub fn check_free_memory(
    plan: &'static str,
    width: usize,
    height: usize,
    needed: usize,
) -> Result<()> {
    let (free, _total) = cudarc::driver::result::mem_get_info()?;
    compare(plan, width, height, needed, free)
}

fn compare(
    plan: &'static str,
    width: usize,
    height: usize,
    needed: usize,
    free: usize,
) -> Result<()> {
    if needed <= free {
        return Ok(());
    }
    Err(Error::Cuda(CudaError::OutOfMemory {
        plan,
        width,
        height,
        needed,
        free,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_that_fits_passes_and_one_that_does_not_names_size_and_bytes() {
        assert!(compare("CUDA SIFT", 1920, 1080, 1000, 1000).is_ok());
        assert!(compare("CUDA SIFT", 1920, 1080, 0, 0).is_ok());
        let error = compare("CUDA SIFT", 8192, 8192, 4_000_000_000, 3_000_000_000).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Cuda(CudaError::OutOfMemory {
                    width: 8192,
                    height: 8192,
                    needed: 4_000_000_000,
                    free: 3_000_000_000,
                    ..
                })
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "CUDA SIFT needs 4000000000 bytes (3814 MiB) of GPU memory for a 8192x8192 frame, \
             but the GPU has 3000000000 bytes (2861 MiB) free"
        );
    }
}
