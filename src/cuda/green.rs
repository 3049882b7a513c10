//! `--sm-limit N` on real hardware: a CUDA green context that holds N SMs, so the
//! block scheduler can place the pipeline's blocks (graph launches included) on
//! those SMs only. Sizing grids to N SMs alone does not limit anything: the
//! scheduler spreads the blocks over every SM of the device.
//!
//! The pipeline makes the green context's `CUcontext` (from `cuCtxFromGreenCtx`) its
//! context: modules, buffers, events and the stream are all created in it, and a
//! stream created while it is current runs its kernels on its SMs only.

use std::ptr;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUdevResource, CUdevResourceType};
use cudarc::driver::{CudaContext, CudaStream, DriverError};

/// First driver (CUDA 12.5, as `cuDriverGetVersion` encodes it) with the green
/// context calls used here, `cuStreamGetGreenCtx` included.
const GREEN_CONTEXT_DRIVER: i32 = 12050;

/// How a pipeline's work is confined to fewer SMs than the device has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SmConfinement {
    /// No limit asked, or one covering the whole device: every SM.
    Whole,
    /// A green context: the hardware runs the work on its SMs only.
    GreenContext,
    /// No green context (the reason is logged): only the grids are sized to the limit.
    GridOnly,
}

impl SmConfinement {
    /// What a device label and the opening log line add after the SM count ("8 SMs,
    /// green context"); nothing for the whole device.
    pub fn describe(&self) -> Option<&'static str> {
        match self {
            Self::Whole => None,
            Self::GreenContext => Some("green context"),
            Self::GridOnly => Some("grid sizing only"),
        }
    }
}

/// Whether `--sm-limit` asks for fewer SMs than the device's `device_sms`.
pub fn limits(sm_limit: Option<u32>, device_sms: u32) -> Option<u32> {
    sm_limit.filter(|&n| n < device_sms).map(|n| n.max(1))
}

/// `Ok` when a driver reporting `version` has every green context call used here.
pub fn driver_supports_green_contexts(version: i32) -> Result<(), String> {
    if version >= GREEN_CONTEXT_DRIVER {
        Ok(())
    } else {
        Err(format!(
            "the driver supports CUDA {}.{}; green contexts need {}.{}",
            version / 1000,
            version % 1000 / 10,
            GREEN_CONTEXT_DRIVER / 1000,
            GREEN_CONTEXT_DRIVER % 1000 / 10
        ))
    }
}

/// A green context on device `ordinal` with at least `sms` SMs (the driver rounds
/// up to its granularity: 8 on sm_90), as a cudarc context, and the SMs it really got.
/// The error says why none could be made.
pub fn green_context(ordinal: usize, sms: u32) -> Result<(Arc<CudaContext>, u32), String> {
    let step = |call: &str, source: DriverError| format!("{call} failed: {source}");
    let mut version = 0;
    // SAFETY: plain query into a local; the driver is initialised by `availability`.
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| step("cuDriverGetVersion", e))?;
    driver_supports_green_contexts(version)?;
    let device =
        cudarc::driver::result::device::get(ordinal as i32).map_err(|e| step("cuDeviceGet", e))?;
    // SAFETY: `CUdevResource` is plain data (integers and bytes): all zeroes is valid.
    let mut whole: CUdevResource = unsafe { std::mem::zeroed() };
    let mut part: CUdevResource = unsafe { std::mem::zeroed() };
    let mut rest: CUdevResource = unsafe { std::mem::zeroed() };
    let mut groups = 1u32;
    // SAFETY: every pointer is to a live local of the type the call expects; one
    // group is asked and `part` has room for one.
    unsafe {
        sys::cuDeviceGetDevResource(
            device,
            &mut whole,
            CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
        )
        .result()
        .map_err(|e| step("cuDeviceGetDevResource", e))?;
        sys::cuDevSmResourceSplitByCount(&mut part, &mut groups, &whole, &mut rest, 0, sms)
            .result()
            .map_err(|e| step(&format!("cuDevSmResourceSplitByCount({sms} SMs)"), e))?;
    }
    // SAFETY: the split filled `part` as an SM resource.
    let granted = unsafe { part.__bindgen_anon_1.sm.smCount };
    if groups != 1 || granted == 0 {
        return Err(format!("the device has no group of {sms} SMs to split off"));
    }
    let mut desc: sys::CUdevResourceDesc = ptr::null_mut();
    let mut green: sys::CUgreenCtx = ptr::null_mut();
    // SAFETY: `part` is the one resource the descriptor is made of; the flag is the
    // one the driver requires.
    unsafe {
        sys::cuDevResourceGenerateDesc(&mut desc, &mut part, 1)
            .result()
            .map_err(|e| step("cuDevResourceGenerateDesc", e))?;
        sys::cuGreenCtxCreate(
            &mut green,
            desc,
            device,
            sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM as u32,
        )
        .result()
        .map_err(|e| step("cuGreenCtxCreate", e))?;
    }
    let mut raw: sys::CUcontext = ptr::null_mut();
    // SAFETY: `green` was just created; on failure it is destroyed before returning.
    let context = unsafe {
        sys::cuCtxFromGreenCtx(&mut raw, green)
            .result()
            .and_then(|()| CudaContext::from_raw_context(ordinal, device, raw))
    };
    let context = context.map_err(|e| {
        // SAFETY: nothing else refers to `green` yet.
        let _ = unsafe { sys::cuGreenCtxDestroy(green) };
        step("cuCtxFromGreenCtx", e)
    })?;
    // cudarc releases a context it wraps with `cuCtxDestroy`, which the handle of a
    // green context must not get: the green context is kept for the process instead
    // (one per pipeline opened with a limit).
    std::mem::forget(Arc::clone(&context));
    Ok((context, granted))
}

/// `Ok` when `stream` is bound to a green context: checks that the driver bound the
/// stream created while the green context was current, rather than trusting it.
pub fn check_stream_is_green(stream: &CudaStream) -> Result<(), String> {
    let mut green: sys::CUgreenCtx = ptr::null_mut();
    // SAFETY: `stream` is alive; the call only writes the handle.
    unsafe { sys::cuStreamGetGreenCtx(stream.cu_stream(), &mut green) }
        .result()
        .map_err(|e| format!("cuStreamGetGreenCtx failed: {e}"))?;
    if green.is_null() {
        Err("the stream created in the green context is not bound to it".into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_at_or_above_the_device_is_no_limit() {
        assert_eq!(limits(None, 132), None);
        assert_eq!(limits(Some(132), 132), None);
        assert_eq!(limits(Some(500), 132), None);
        assert_eq!(limits(Some(8), 132), Some(8));
        assert_eq!(limits(Some(0), 132), Some(1));
    }

    #[test]
    fn green_contexts_need_a_cuda_12_5_driver() {
        assert!(driver_supports_green_contexts(13000).is_ok());
        assert!(driver_supports_green_contexts(12050).is_ok());
        let old = driver_supports_green_contexts(12020).unwrap_err();
        assert!(old.contains("CUDA 12.2") && old.contains("12.5"), "{old}");
    }
}
