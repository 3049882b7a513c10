//! Linking the r2r transport against a ROS 2 prefix made of PyPI wheels
//! (`scripts/setup-ros.sh`). An apt or source install of ROS 2 needs none of this, and
//! nothing here runs for it, nor without the `r2r` feature.
//!
//! The wheels differ from an install in ways that matter to a Rust binary (the missing
//! `librmw_implementation.so` is made by scripts/setup-ros.sh, since r2r's own build
//! script links it too):
//! - their `*__rosidl_generator_py` libraries, which `librcl.so` needs, use libpython's
//!   symbols without linking libpython (they expect to be loaded by Python): the binary
//!   links the prefix's libpython itself;
//! - their libraries find neither each other nor their bundled dependencies
//!   (`site-packages/ros_*.libs`) without `LD_LIBRARY_PATH`: the binary carries an RPATH
//!   (not RUNPATH, which would not apply to the libraries' own dependencies) to every
//!   prefix's `lib`, those bundled folders and libpython's folder.
//!
//! So the node runs with only the prefix's `setup.bash` sourced, or with nothing at all.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_R2R").is_none() {
        return;
    }
    // Watched only with r2r: sourcing ROS must not rebuild the other configurations.
    println!("cargo:rerun-if-env-changed=AMENT_PREFIX_PATH");
    // Without a sourced ROS (the `r2r/doc-only` type check) there is nothing to link.
    let Some(ament_prefix_path) = env::var_os("AMENT_PREFIX_PATH") else {
        return;
    };
    let prefixes: Vec<PathBuf> = env::split_paths(&ament_prefix_path)
        .filter(|prefix| prefix.join("lib").is_dir())
        .collect();
    let Some(wheel_prefix) = prefixes
        .iter()
        .find(|prefix| !bundled_lib_dirs(prefix).is_empty())
    else {
        return;
    };

    let mut rpath: Vec<PathBuf> = prefixes.iter().map(|prefix| prefix.join("lib")).collect();
    rpath.extend(bundled_lib_dirs(wheel_prefix));

    let libpython = python_library(&wheel_prefix.join("bin").join("python3"));
    rpath.push(
        libpython
            .parent()
            .expect("a library path has a folder")
            .to_path_buf(),
    );
    // Needed although no Rust code calls into it: the generator_py libraries do.
    println!(
        "cargo:rustc-link-arg=-Wl,--push-state,--no-as-needed,{},--pop-state",
        libpython.display()
    );
    let rpath = env::join_paths(rpath).expect("library folders without ':'");
    println!(
        "cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{}",
        rpath.to_string_lossy()
    );
}

/// The folders where the wheels keep the libraries they bundle (auditwheel's `<dist>.libs`).
fn bundled_lib_dirs(prefix: &Path) -> Vec<PathBuf> {
    let Ok(lib_entries) = fs::read_dir(prefix.join("lib")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = lib_entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("python3"))
        .flat_map(|python| {
            fs::read_dir(python.path().join("site-packages"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with("ros_") && name.ends_with(".libs")
        })
        .map(|entry| entry.path())
        .collect();
    dirs.sort();
    dirs
}

/// The shared libpython of the prefix's Python, as its sysconfig names it.
fn python_library(python: &Path) -> PathBuf {
    let output = Command::new(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('LIBDIR'), \
             sysconfig.get_config_var('LDLIBRARY'), sep='/')",
        ])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        output.status.success(),
        "{} failed to report its libpython",
        python.display()
    );
    let library = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    assert!(
        library.extension().is_some_and(|ext| ext == "so") && library.exists(),
        "{} has no shared libpython ({}): the ROS wheels' libraries need one",
        python.display(),
        library.display()
    );
    library
}
