//! GStreamer's GLib log lines into the node's log. A pipeline that never starts makes
//! GStreamer print `GStreamer-CRITICAL` lines through GLib straight to stderr, past
//! OpenCV's logger, before the node's own error that names the pipeline: they go to
//! `log` at debug level instead (`RUST_LOG=debug` shows them).
//!
//! GLib is looked up at run time (it is loaded with OpenCV's GStreamer backend), so
//! building needs no GLib headers and a build without GStreamer simply has nothing to
//! route.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::Once;

/// `GLogLevelFlags` values (glib/gmessages.h).
const G_LOG_LEVEL_CRITICAL: c_int = 1 << 3;
const G_LOG_LEVEL_WARNING: c_int = 1 << 4;

/// GStreamer's `G_LOG_DOMAIN`.
const DOMAIN: &CStr = c"GStreamer";

type GLogFunc = unsafe extern "C" fn(*const c_char, c_int, *const c_char, *mut c_void);
type GLogSetHandler = unsafe extern "C" fn(*const c_char, c_int, GLogFunc, *mut c_void) -> c_uint;

/// The handler GLib calls for each routed line.
unsafe extern "C" fn to_log(
    domain: *const c_char,
    _level: c_int,
    message: *const c_char,
    _data: *mut c_void,
) {
    let text = |pointer: *const c_char| match pointer.is_null() {
        true => "".into(),
        // SAFETY: GLib passes NUL-terminated strings that live for the call.
        false => unsafe { CStr::from_ptr(pointer) }.to_string_lossy(),
    };
    log::debug!("{}: {}", text(domain), text(message));
}

/// Routes GStreamer's critical and warning lines to `log`, once per process; does
/// nothing where GLib is not loaded.
pub fn route_to_log() {
    static ROUTED: Once = Once::new();
    ROUTED.call_once(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
        let symbol = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"g_log_set_handler".as_ptr()) };
        if symbol.is_null() {
            return;
        }
        // SAFETY: the symbol is GLib's `g_log_set_handler`, whose C signature
        // GLogSetHandler spells; the domain is a static string and the handler a function
        // that lives as long as the process.
        unsafe {
            let set_handler = std::mem::transmute::<*mut c_void, GLogSetHandler>(symbol);
            set_handler(
                DOMAIN.as_ptr(),
                G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING,
                to_log,
                std::ptr::null_mut(),
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

    struct Capture;

    impl log::Log for Capture {
        fn enabled(&self, _: &log::Metadata) -> bool {
            true
        }
        fn log(&self, record: &log::Record) {
            let mut lines = LINES.lock().unwrap_or_else(|p| p.into_inner());
            lines.push(record.args().to_string());
        }
        fn flush(&self) {}
    }

    #[test]
    fn a_failed_gstreamer_check_goes_to_the_log_not_to_stderr() {
        log::set_logger(&Capture).expect("no other logger in the unit tests");
        log::set_max_level(log::LevelFilter::Debug);
        route_to_log();
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
        let post = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"gst_element_post_message".as_ptr()) };
        assert!(!post.is_null(), "GStreamer comes with OpenCV's videoio");
        type Post = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
        // SAFETY: gst_element_post_message(GstElement *, GstMessage *) returns a gboolean;
        // given no element it only reports its failed check (a GStreamer-CRITICAL line)
        // and returns FALSE.
        let posted = unsafe {
            let post = std::mem::transmute::<*mut c_void, Post>(post);
            post(std::ptr::null_mut(), std::ptr::null_mut())
        };
        assert_eq!(posted, 0);
        let lines = LINES.lock().unwrap_or_else(|p| p.into_inner());
        assert!(
            lines
                .iter()
                .any(|line| line.starts_with("GStreamer: gst_element_post_message: assertion")),
            "{lines:?}"
        );
    }
}
