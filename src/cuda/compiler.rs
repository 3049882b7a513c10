//! NVRTC: CUDA C++ source to a cubin for one exact architecture.
//!
//! cudarc's safe NVRTC layer returns PTX and takes no headers; we want machine code
//! for the exact `sm_XX` (no JIT at load, no PTX-version mismatch with an older
//! driver) and `#include "common/..."` served from memory, so this file drives the
//! `nvrtc` sys layer directly. Call [`crate::cuda::availability`] first.

use std::ffi::{c_char, c_int, CString};
use std::fmt;

use cudarc::nvrtc::result::NvrtcError;
use cudarc::nvrtc::sys;

use crate::error::{ConfigError, CudaError, Error, Result};

/// A real GPU architecture, `sm_XY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Arch {
    pub major: u32,
    pub minor: u32,
}

impl Arch {
    /// Parses `sm_87`, `sm_110`, `87` or `8.7`.
    pub fn parse(text: &str) -> Result<Self> {
        let invalid = || {
            Error::Config(ConfigError::Invalid {
                name: "arch".into(),
                reason: format!("`{text}` is not an architecture like sm_87 or sm_110"),
            })
        };
        let digits = text.strip_prefix("sm_").unwrap_or(text);
        let (major, minor) = match digits.split_once('.') {
            Some((major, minor)) => (major, minor),
            None if digits.len() >= 2 => digits.split_at(digits.len() - 1),
            None => return Err(invalid()),
        };
        let major: u32 = major.parse().map_err(|_| invalid())?;
        let minor: u32 = minor.parse().map_err(|_| invalid())?;
        if !(5..=20).contains(&major) || minor > 9 {
            return Err(invalid());
        }
        Ok(Self { major, minor })
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

/// The loaded libnvrtc's version, `(major, minor)`.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: both pointers are to live locals; nvrtcVersion only writes them.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|source| nvrtc_error("nvrtcVersion", source))?;
    Ok((major, minor))
}

fn nvrtc_error(call: &'static str, source: NvrtcError) -> Error {
    Error::Cuda(CudaError::Nvrtc { call, source })
}

/// An NVRTC program, destroyed on drop. Holds the C strings NVRTC may point into.
struct Program {
    handle: sys::nvrtcProgram,
    _strings: Vec<CString>,
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `handle` came from a successful nvrtcCreateProgram and is destroyed once.
        let result = unsafe { sys::nvrtcDestroyProgram(&mut self.handle) };
        if let Err(error) = result.result() {
            log::warn!("nvrtcDestroyProgram failed: {error}");
        }
    }
}

fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text).map_err(|_| {
        Error::Config(ConfigError::Invalid {
            name: what.into(),
            reason: "contains a NUL byte".into(),
        })
    })
}

impl Program {
    fn create(name: &str, source: &str, headers: &[(&str, &str)]) -> Result<Self> {
        let mut strings = vec![c_string(source, name)?, c_string(name, name)?];
        for (include_name, text) in headers {
            strings.push(c_string(text, include_name)?);
            strings.push(c_string(include_name, include_name)?);
        }
        let header_texts: Vec<*const c_char> =
            strings[2..].iter().step_by(2).map(|s| s.as_ptr()).collect();
        let include_names: Vec<*const c_char> =
            strings[3..].iter().step_by(2).map(|s| s.as_ptr()).collect();
        let mut handle: sys::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: every pointer is to a NUL-terminated string owned by `strings`, which
        // the returned Program keeps alive until nvrtcDestroyProgram; the two arrays
        // have `headers.len()` entries each.
        unsafe {
            sys::nvrtcCreateProgram(
                &mut handle,
                strings[0].as_ptr(),
                strings[1].as_ptr(),
                headers.len() as c_int,
                header_texts.as_ptr(),
                include_names.as_ptr(),
            )
        }
        .result()
        .map_err(|source| nvrtc_error("nvrtcCreateProgram", source))?;
        Ok(Self {
            handle,
            _strings: strings,
        })
    }

    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: `handle` is live; `size` is a live local.
        if unsafe { sys::nvrtcGetProgramLogSize(self.handle, &mut size) }
            .result()
            .is_err()
        {
            return "(no log: nvrtcGetProgramLogSize failed)".into();
        }
        let mut log = vec![0u8; size.max(1)];
        // SAFETY: `log` holds the `size` bytes NVRTC said it will write.
        if unsafe { sys::nvrtcGetProgramLog(self.handle, log.as_mut_ptr().cast()) }
            .result()
            .is_err()
        {
            return "(no log: nvrtcGetProgramLog failed)".into();
        }
        String::from_utf8_lossy(&log)
            .trim_end_matches('\0')
            .trim()
            .to_owned()
    }

    fn cubin(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: `handle` is a successfully compiled program; `size` is a live local.
        unsafe { sys::nvrtcGetCUBINSize(self.handle, &mut size) }
            .result()
            .map_err(|source| nvrtc_error("nvrtcGetCUBINSize", source))?;
        let mut cubin = vec![0u8; size];
        // SAFETY: `cubin` holds exactly the `size` bytes NVRTC writes.
        unsafe { sys::nvrtcGetCUBIN(self.handle, cubin.as_mut_ptr().cast()) }
            .result()
            .map_err(|source| nvrtc_error("nvrtcGetCUBIN", source))?;
        Ok(cubin)
    }
}

/// Compiles `source` (named `name`, with `#include`-able `headers`) for `arch` with
/// `options` and returns the cubin, or the compiler's log as the error.
pub fn compile_cubin(
    name: &str,
    source: &str,
    headers: &[(&str, &str)],
    arch: Arch,
    options: &[String],
) -> Result<Vec<u8>> {
    let program = Program::create(name, source, headers)?;
    let mut all_options = vec![format!("--gpu-architecture={arch}")];
    all_options.extend(options.iter().cloned());
    let c_options = all_options
        .iter()
        .map(|o| c_string(o, "nvrtc option"))
        .collect::<Result<Vec<_>>>()?;
    let pointers: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: `pointers` has one NUL-terminated string per option, alive for the call.
    let compiled = unsafe {
        sys::nvrtcCompileProgram(program.handle, pointers.len() as c_int, pointers.as_ptr())
    };
    if compiled.result().is_err() {
        return Err(Error::Cuda(CudaError::Compile {
            module: name.to_owned(),
            arch: arch.to_string(),
            log: program.log(),
        }));
    }
    program.cubin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parses_the_usual_spellings() {
        assert_eq!(Arch::parse("sm_87").unwrap(), Arch { major: 8, minor: 7 });
        assert_eq!(
            Arch::parse("sm_110").unwrap(),
            Arch {
                major: 11,
                minor: 0
            }
        );
        assert_eq!(Arch::parse("9.0").unwrap().to_string(), "sm_90");
        assert!(Arch::parse("sm_").is_err());
        assert!(Arch::parse("compute_90").is_err());
        assert!(Arch::parse("sm_9x").is_err());
    }
}
