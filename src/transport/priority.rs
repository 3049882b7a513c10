//! The processing thread gives way to the transport's receive threads.
//!
//! A frame arrives as one burst of datagrams that the DDS stack's receive thread must
//! drain before the kernel's socket buffer fills; meanwhile extraction can hold a core
//! for tens of milliseconds per frame. Linux schedules every thread by its own nice
//! value, and an unprivileged process may only lower priorities: so the processing
//! thread runs below the receive threads, which win the CPU whenever both want it.

/// The processing thread's nice value: a CFS weight of 110 against 1024 at nice 0.
const PROCESSING_NICE: i32 = 10;

/// Lowers the calling thread (the processing thread) below the transport's threads.
#[cfg(target_os = "linux")]
pub fn yield_to_transport() -> std::io::Result<()> {
    // SAFETY: gettid has no preconditions; setpriority with PRIO_PROCESS and a thread id
    // changes only that thread's nice value.
    let changed = unsafe {
        let thread = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, thread as libc::id_t, PROCESSING_NICE)
    };
    match changed {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Elsewhere threads keep their priority.
#[cfg(not(target_os = "linux"))]
pub fn yield_to_transport() -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn nice_of_this_thread() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        // Field 19 of stat(5), the 17th after the command name.
        fields[16].parse().unwrap()
    }

    #[test]
    fn only_the_calling_thread_is_lowered() {
        let before = nice_of_this_thread();
        let lowered = std::thread::spawn(|| {
            yield_to_transport().unwrap();
            nice_of_this_thread()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, PROCESSING_NICE.max(before));
        assert_eq!(nice_of_this_thread(), before);
    }
}
