//! Whether the CUDA backend can run here, asked without letting cudarc panic.

use crate::error::{CudaError, Error, Result};

/// `Ok` when libnvrtc can be loaded (enough to compile kernels, no GPU needed).
pub fn nvrtc_available() -> Result<()> {
    // SAFETY: `is_culib_present` only tries `dlopen` on the candidate library names
    // and drops the handles; it calls no CUDA function.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::Cuda(CudaError::Unavailable(format!(
            "libnvrtc not found (searched {:?}; set LD_LIBRARY_PATH to its folder)",
            cudarc::get_lib_name_candidates("nvrtc")
        ))))
    }
}

/// `Ok` when libcuda can be loaded (a driver is installed; a device may still be absent).
pub fn driver_available() -> Result<()> {
    // SAFETY: as in `nvrtc_available`: a `dlopen` probe, no CUDA call.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::Cuda(CudaError::Unavailable(
            "libcuda not found: no NVIDIA driver on this machine".into(),
        )))
    }
}

/// `Ok` when the driver, NVRTC and at least one device are there; the error names what is missing.
pub fn availability() -> Result<()> {
    driver_available()?;
    nvrtc_available()?;
    let count = cudarc::driver::result::init()
        .and_then(|()| cudarc::driver::result::device::get_count())
        .map_err(|source| Error::Cuda(CudaError::DriverStart(source)))?;
    if count < 1 {
        return Err(Error::Cuda(CudaError::Unavailable(
            "the driver reports no CUDA device".into(),
        )));
    }
    Ok(())
}
