//! orbsift_node in stereo mode, started as launch files start it (namespace, params
//! file), fed a left/right pair with a known disparity over DDS.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use orbsift::msgs::{Features, Header, Image, Matches, Time};
use orbsift::transport::dds::{result_qos, DdsEndpoint};
use orbsift::transport::RosArgs;
use orbsift::GrayImage;

use common::ros::Running;

/// The right camera sees the scene this many pixels further left.
const DISPARITY: usize = 12;

/// A `width`-wide window of `image` starting at column `left`.
fn window(image: &GrayImage, left: usize, width: usize, frame_id: &str, stamp: Time) -> Image {
    let data = (0..image.height())
        .flat_map(|y| image.row(y)[left..left + width].iter().copied())
        .collect::<Vec<u8>>()
        .into();
    Image {
        header: Header {
            stamp,
            frame_id: frame_id.into(),
        },
        height: image.height() as u32,
        width: width as u32,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: width as u32,
        data,
    }
}

#[test]
fn stereo_pairs_are_matched_consistently_with_the_disparity() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let domain = 60 + (std::process::id() % 40) as u16;
    let _node = Running(
        Command::new(env!("CARGO_BIN_EXE_orbsift_node"))
            .args(["--ros-args", "-r", "__ns:=/rig", "--params-file"])
            .arg(root.join("config/stereo.yaml"))
            .args(["-p", "backend:=cpu"])
            .env("ROS_DOMAIN_ID", domain.to_string())
            .env("RUST_LOG", "warn")
            .spawn()
            .expect("start orbsift_node"),
    );
    let args: Vec<String> = ["--ros-args", "-r", "__ns:=/rig"]
        .map(String::from)
        .to_vec();
    let mut camera = DdsEndpoint::new(RosArgs::parse("stereo_camera", &args).unwrap(), domain)
        .expect("join the domain");
    let left_pub = camera
        .publisher::<Image>("left/image", result_qos())
        .unwrap();
    let right_pub = camera
        .publisher::<Image>("right/image", result_qos())
        .unwrap();
    let features = camera
        .subscription::<Features>("features", result_qos())
        .unwrap();
    let matches = camera
        .subscription::<Matches>("matches", result_qos())
        .unwrap();

    let scene = GrayImage::open(&root.join("tests/data/basketball1.png")).unwrap();
    let width = scene.width() - DISPARITY;
    let mut seen: HashMap<(String, i32), Features> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut sec = 0;
    let found = 'outer: loop {
        assert!(Instant::now() < deadline, "no stereo Matches within 90 s");
        sec += 1;
        // The right image 2 ms after the left: inside the 5 ms tolerance of stereo.yaml.
        let left = window(&scene, DISPARITY, width, "left", Time { sec, nanosec: 0 });
        let right = window(
            &scene,
            0,
            width,
            "right",
            Time {
                sec,
                nanosec: 2_000_000,
            },
        );
        left_pub.publish(left).unwrap();
        right_pub.publish(right).unwrap();
        let wait_until = Instant::now() + Duration::from_secs(3);
        while Instant::now() < wait_until {
            while let Some((f, _)) = features.take().unwrap() {
                seen.insert((f.header.frame_id.clone(), f.header.stamp.sec), f);
            }
            if let Some((m, _)) = matches.take().unwrap() {
                break 'outer m;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert_eq!(found.mode, "stereo");
    assert_eq!(found.header.frame_id, "left");
    assert_eq!(found.train_header.frame_id, "right");
    assert_eq!(found.header.stamp.sec, found.train_header.stamp.sec);
    assert_eq!(found.train_header.stamp.nanosec, 2_000_000);
    let stamp = found.header.stamp.sec;
    let wait_until = Instant::now() + Duration::from_secs(5);
    while !(seen.contains_key(&("left".into(), stamp))
        && seen.contains_key(&("right".into(), stamp)))
    {
        assert!(
            Instant::now() < wait_until,
            "the pair's Features did not arrive"
        );
        if let Some((f, _)) = features.take().unwrap() {
            seen.insert((f.header.frame_id.clone(), f.header.stamp.sec), f);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (left, right) = (
        &seen[&("left".into(), stamp)],
        &seen[&("right".into(), stamp)],
    );
    assert!(
        found.query_idx.len() >= 100,
        "{} matches",
        found.query_idx.len()
    );
    // A scene point at x in the left image is at x + DISPARITY in the right one.
    let consistent = found
        .query_idx
        .iter()
        .zip(&found.train_idx)
        .filter(|(&q, &t)| {
            let (q, t) = (q as usize, t as usize);
            (left.x[q] + DISPARITY as f32 - right.x[t]).abs() <= 2.0
                && (left.y[q] - right.y[t]).abs() <= 2.0
        })
        .count();
    let ratio = consistent as f64 / found.query_idx.len() as f64;
    assert!(
        ratio >= 0.8,
        "{consistent} of {} matches agree with the disparity",
        found.query_idx.len()
    );
}
