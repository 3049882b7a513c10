//! How much kernel receive buffer the DDS sockets ask for, and what to tell the user
//! when `net.core.rmem_max` caps it.
//!
//! A camera frame arrives as one burst of datagrams (6.2 MB for 1920x1080 bgr8, 24.9 MB
//! for 3840x2160), often while the publisher holds the CPU the receiving thread needs:
//! what the socket cannot hold until that thread runs is dropped by the kernel
//! (`RcvbufErrors` in /proc/net/snmp), and a best-effort frame missing one fragment is
//! lost whole.

/// Bytes of `SO_RCVBUF` wanted per socket: Linux accounts twice the request, so this
/// holds two 4K bgr8 frames in flight.
pub const WANTED: usize = 32 << 20;

const RMEM_MAX: &str = "/proc/sys/net/core/rmem_max";

/// The `SO_RCVBUF` to request, and the warning to log once when the kernel's ceiling
/// is below what is wanted.
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub request: usize,
    pub warning: Option<String>,
}

/// The plan for `wanted` bytes under a ceiling of `rmem_max` (`None`: unknown, as on a
/// system without /proc; the request is then made as is).
///
/// Asking above the ceiling gains nothing (the kernel clamps silently) and makes the
/// DDS stack warn once per socket, so the request is the ceiling and the node says
/// once how to raise it.
pub fn plan(wanted: usize, rmem_max: Option<usize>) -> Plan {
    match rmem_max {
        Some(ceiling) if ceiling < wanted => Plan {
            request: ceiling,
            warning: Some(format!(
                "net.core.rmem_max is {ceiling} bytes: the DDS sockets get {} MiB of receive \
                 buffer instead of {} MiB, and large frames (1080p and up) can be lost in \
                 bursts; raise it with `sudo sysctl -w net.core.rmem_max={wanted}` (and \
                 net.core.rmem_max={wanted} in /etc/sysctl.d/ to keep it)",
                ceiling >> 20,
                wanted >> 20,
            )),
        },
        _ => Plan {
            request: wanted,
            warning: None,
        },
    }
}

/// This machine's ceiling, when it can be read.
pub fn rmem_max() -> Option<usize> {
    std::fs::read_to_string(RMEM_MAX).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_low_ceiling_is_requested_and_named_with_the_sysctl_that_lifts_it() {
        let plan = plan(WANTED, Some(4 << 20));
        assert_eq!(plan.request, 4 << 20);
        let warning = plan.warning.expect("a warning");
        assert!(
            warning.contains("net.core.rmem_max is 4194304 bytes"),
            "{warning}"
        );
        assert!(
            warning.contains("sudo sysctl -w net.core.rmem_max=33554432"),
            "{warning}"
        );
    }

    #[test]
    fn a_ceiling_at_or_above_the_wish_is_silent() {
        for ceiling in [WANTED, WANTED + 1, 1 << 30] {
            assert_eq!(
                plan(WANTED, Some(ceiling)),
                Plan {
                    request: WANTED,
                    warning: None
                }
            );
        }
    }

    #[test]
    fn an_unknown_ceiling_requests_the_wish_without_a_warning() {
        assert_eq!(
            plan(WANTED, None),
            Plan {
                request: WANTED,
                warning: None
            }
        );
    }
}
