//! Publish → subscribe through the real DDS stack on localhost, for every message
//! type the node exchanges, with names resolved as the node resolves them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use orbsift::msgs::{
    DiagnosticArray, DiagnosticStatus, Features, Header, Image, KeyValue, Matches, RosMessage, Time,
};
use orbsift::transport::dds::{result_qos, sensor_qos, DdsEndpoint};
use orbsift::transport::RosArgs;
use ros2_client::dds::rustdds::DomainParticipantBuilder;

/// A domain of its own per test process, so parallel runs do not hear each other.
fn isolated_domain() -> u16 {
    100 + (std::process::id() % 100) as u16
}

fn endpoint(name: &str, extra: &str) -> DdsEndpoint {
    let args: Vec<String> = format!("--ros-args -r __node:={name} -r __ns:=/loop {extra}")
        .split_whitespace()
        .map(String::from)
        .collect();
    DdsEndpoint::new(RosArgs::parse(name, &args).unwrap(), isolated_domain()).unwrap()
}

/// Publishes `message` until the subscriber takes it (discovery takes a moment).
fn round_trip<M>(topic: &str, message: M, sensor: bool) -> M
where
    M: RosMessage + Clone + std::fmt::Debug + Sync,
{
    let qos = if sensor { sensor_qos() } else { result_qos() };
    let mut sender = endpoint(&format!("send_{}", M::NAME.to_lowercase()), "");
    let mut receiver = endpoint(&format!("recv_{}", M::NAME.to_lowercase()), "");
    let publisher = sender.publisher::<M>(topic, result_qos()).unwrap();
    let subscription = receiver.subscription::<M>(topic, qos).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        publisher.publish(message.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        if let Some((received, _info)) = subscription.take().unwrap() {
            return received;
        }
    }
    panic!("no {} arrived on {topic} within 20 s", M::NAME);
}

fn header(frame_id: &str) -> Header {
    Header {
        stamp: Time {
            sec: 1_700_000_123,
            nanosec: 456_789,
        },
        frame_id: frame_id.into(),
    }
}

#[test]
fn images_arrive_intact_on_a_best_effort_subscription() {
    // 640x480 rgb8: large enough to need DDS fragmentation.
    let image = Image {
        header: header("camera"),
        height: 480,
        width: 640,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: 640 * 3,
        data: (0..640 * 480 * 3)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>()
            .into(),
    };
    assert_eq!(round_trip("image", image.clone(), true), image);
}

#[test]
fn features_arrive_intact() {
    let features = Features {
        header: header("left"),
        image_width: 640,
        image_height: 480,
        algorithm: "orb".into(),
        x: vec![1.0, 2.5, 3.25],
        y: vec![4.0, 5.5, 6.75],
        size: vec![31.0, 37.2, 44.64],
        angle: vec![0.0, 90.5, 359.0],
        response: vec![0.1, 0.2, 0.3],
        octave: vec![0, 1, 2],
        descriptor_type: "orb256".into(),
        descriptor_size: 32,
        descriptors: (0..96).collect(),
    };
    assert_eq!(round_trip("features", features.clone(), false), features);
}

#[test]
fn matches_arrive_intact() {
    let matches = Matches {
        header: header("left"),
        train_header: header("right"),
        mode: "stereo".into(),
        query_idx: vec![0, 1, 2],
        train_idx: vec![2, 0, 1],
        distance: vec![10.0, 20.0, 30.0],
    };
    assert_eq!(round_trip("matches", matches.clone(), false), matches);
}

#[test]
fn diagnostics_arrive_intact() {
    let diagnostics = DiagnosticArray {
        header: header(""),
        status: vec![DiagnosticStatus {
            level: DiagnosticStatus::WARN,
            name: "orbsift".into(),
            message: "running".into(),
            hardware_id: "cpu".into(),
            values: vec![KeyValue {
                key: "frames_rejected".into(),
                value: "3".into(),
            }],
        }],
    };
    assert_eq!(
        round_trip("/diagnostics", diagnostics.clone(), false),
        diagnostics
    );
}

#[test]
fn remapped_names_reach_the_remapped_topic() {
    let mut sender = endpoint("remap_sender", "");
    let mut receiver = endpoint("remap_receiver", "-r features:=/elsewhere/feats");
    let publisher = sender
        .publisher::<Header>("/elsewhere/feats", result_qos())
        .unwrap();
    let subscription = receiver
        .subscription::<Header>("features", result_qos())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        publisher.publish(header("remapped")).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        if let Some((received, _)) = subscription.take().unwrap() {
            assert_eq!(received, header("remapped"));
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing arrived through the remapping"
        );
    }
}

#[test]
fn a_participant_dropped_while_discovery_announces_it_goes_quietly() {
    // Discovery announces a new participant 100 ms after it joins, holding the
    // participant meanwhile. A node that stops about then (a camera that cannot be opened)
    // leaves Discovery the last reference; dropping it there must not join Discovery's own
    // thread. The drops sweep that announcement in 20 µs steps.
    static DISCOVERY_PANICS: AtomicUsize = AtomicUsize::new(0);
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let on_discovery = std::thread::current()
            .name()
            .is_some_and(|name| name.contains("discovery"));
        if on_discovery {
            DISCOVERY_PANICS.fetch_add(1, Ordering::SeqCst);
        }
        report(info);
    }));
    let offsets_us: Vec<u64> = (0..240).map(|step| 97_600 + 20 * step).collect();
    for batch in offsets_us.chunks(24) {
        let participants: Vec<_> = batch
            .iter()
            .map(|&offset_us| {
                std::thread::spawn(move || {
                    let participant = DomainParticipantBuilder::new(isolated_domain())
                        .build()
                        .unwrap();
                    std::thread::sleep(Duration::from_micros(offset_us));
                    drop(participant);
                })
            })
            .collect();
        for participant in participants {
            participant.join().unwrap();
        }
    }
    // Discovery threads left to end by themselves get the time to do so.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(DISCOVERY_PANICS.load(Ordering::SeqCst), 0);
}
