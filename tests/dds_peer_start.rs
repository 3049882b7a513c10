//! Once the embedded transport counts a subscriber of another DDS as there, that
//! subscriber hears every result from the first one on. The subscriber (Cyclone DDS,
//! or rclpy over Fast DDS) is started before the node's participant, as a robot's
//! SLAM front end is; the node's Features, real and fragmented, then go out back to
//! back, as they do when a file is read faster than they are sent.

mod common;

use std::time::{Duration, Instant};

use common::listener::{Peer, ResultListener};
use common::peer::test_data;
use orbsift::msgs::{features_message, Header, Time};
use orbsift::node::Outputs;
use orbsift::transport::dds::DdsTransport;
use orbsift::transport::{RosArgs, Transport};
use orbsift::{Algorithm, Backend, Config, GrayImage};

const BURST: u32 = 6;

#[test]
fn features_sent_back_to_back_all_reach_a_cyclonedds_subscriber_that_was_there_first() {
    burst_reaches(Peer::CycloneDds, 0);
}

#[test]
fn features_sent_back_to_back_all_reach_an_rclpy_subscriber_that_was_there_first() {
    burst_reaches(Peer::Rclpy, 1);
}

/// Publishes a burst of Features once `peer` counts as subscribed, on a domain of
/// its own (`test` < 2), and checks it heard every one, in order.
fn burst_reaches(peer: Peer, test: u16) {
    let config = Config {
        backend: Backend::Cpu,
        ..Config::default()
    };
    let image = GrayImage::open(&test_data("basketball1.png")).unwrap();
    let features = orbsift::create_extractor(&config)
        .unwrap()
        .extract(&image)
        .unwrap();
    assert!(features.keypoints.x.len() > 400, "few keypoints to send");

    let domain = 200 + (std::process::id() % 15) as u16 * 2 + test;
    let listener = ResultListener::start(peer, domain, false);
    let args = RosArgs::parse("orbsift", &[]).unwrap();
    let mut transport = DdsTransport::new(args, domain).unwrap();
    let outputs = transport.outputs(false).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !outputs.features_subscribed() {
        assert!(Instant::now() < deadline, "{peer:?} was not discovered");
        std::thread::sleep(Duration::from_millis(10));
    }

    for frame in 0..BURST {
        let header = Header {
            stamp: Time {
                sec: 1_700_000_000,
                nanosec: frame,
            },
            frame_id: "burst".into(),
        };
        let message = features_message(header, Algorithm::Orb, &features);
        outputs.publish_features(message).unwrap();
    }
    // Repair of anything lost on the way has a moment.
    std::thread::sleep(Duration::from_secs(2));
    let heard = listener.finish();

    let stamps: Vec<u32> = heard.features.iter().map(|f| f.stamp.1).collect();
    assert_eq!(stamps, (0..BURST).collect::<Vec<_>>(), "{peer:?}");
    for f in &heard.features {
        assert_eq!(f.keypoints, features.keypoints.x.len());
    }
}
