use serde_reflection::{ContainerFormat, Format, Named, Tracer, TracerConfig};

use super::*;
use crate::config::Algorithm;
use crate::error::{Error, ImageError, TransportError};
use crate::types::{self, DescriptorKind, Descriptors, Keypoints};

fn header(sec: i32, nanosec: u32, frame_id: &str) -> Header {
    Header {
        stamp: Time { sec, nanosec },
        frame_id: frame_id.into(),
    }
}

/// The serde format a `.msg` field type must have.
fn format_of_msg_type(ros_type: &str) -> Format {
    if let Some(element) = ros_type.strip_suffix("[]") {
        // Byte sequences are serialised as one block (serde_bytes): CDR writes both as a
        // length and the bytes.
        return match format_of_msg_type(element) {
            Format::U8 => Format::Bytes,
            other => Format::Seq(Box::new(other)),
        };
    }
    match ros_type {
        "uint8" | "byte" => Format::U8,
        "int32" => Format::I32,
        "uint32" => Format::U32,
        "float32" => Format::F32,
        "string" => Format::Str,
        "std_msgs/Header" => Format::TypeName("Header".into()),
        other => panic!("the test does not know the .msg type {other}"),
    }
}

/// `(name, format)` of each field of a `.msg` file, in order.
fn parse_msg_file(name: &str) -> Vec<(String, Format)> {
    let path = format!(
        "{}/msgs/orbsift_msgs/msg/{name}.msg",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|line| line.split('#').next().unwrap().trim())
        .filter(|line| !line.is_empty())
        .map(|line| {
            let mut words = line.split_whitespace();
            let (ros_type, field) = (words.next().unwrap(), words.next().unwrap());
            assert_eq!(
                words.next(),
                None,
                "constants and defaults are not expected: {line}"
            );
            (field.to_string(), format_of_msg_type(ros_type))
        })
        .collect()
}

#[test]
fn rust_structs_have_the_fields_types_and_order_of_the_msg_files() {
    let mut tracer = Tracer::new(TracerConfig::default());
    tracer.trace_simple_type::<Features>().unwrap();
    tracer.trace_simple_type::<Matches>().unwrap();
    let registry = tracer.registry().unwrap();
    for name in [Features::NAME, Matches::NAME] {
        let ContainerFormat::Struct(fields) = &registry[name] else {
            panic!("{name} is not traced as a struct");
        };
        let rust: Vec<(String, Format)> = fields
            .iter()
            .map(|Named { name, value }| (name.clone(), value.clone()))
            .collect();
        assert_eq!(rust, parse_msg_file(name), "{name}");
    }
}

#[test]
fn header_has_the_hand_computed_cdr_layout() {
    let bytes = encode(&header(1, 2, "cam")).unwrap();
    #[rustfmt::skip]
    let expected = [
        0x00, 0x01, 0x00, 0x00, // encapsulation: CDR_LE, no options
        0x01, 0x00, 0x00, 0x00, // stamp.sec
        0x02, 0x00, 0x00, 0x00, // stamp.nanosec
        0x04, 0x00, 0x00, 0x00, // frame_id length, counting the NUL
        b'c', b'a', b'm', 0x00,
    ];
    assert_eq!(bytes, expected);
}

#[test]
fn alignment_is_counted_from_the_end_of_the_encapsulation_header() {
    let array = DiagnosticArray {
        header: header(0, 0, ""),
        status: vec![DiagnosticStatus {
            level: DiagnosticStatus::WARN,
            name: "a".into(),
            ..Default::default()
        }],
    };
    let bytes = encode(&array).unwrap();
    #[rustfmt::skip]
    let body = [
        0, 0, 0, 0, 0, 0, 0, 0, // stamp
        1, 0, 0, 0, 0,          // frame_id "" = length 1 + NUL
        0, 0, 0,                // pad to 4
        1, 0, 0, 0,             // status length
        1,                      // level (byte)
        0, 0, 0,                // pad to 4
        2, 0, 0, 0, b'a', 0,    // name
        0, 0,                   // pad
        1, 0, 0, 0, 0,          // message ""
        0, 0, 0,                // pad
        1, 0, 0, 0, 0,          // hardware_id ""
        0, 0, 0,                // pad
        0, 0, 0, 0,             // values length
    ];
    assert_eq!(&bytes[..4], &[0, 1, 0, 0]);
    assert_eq!(&bytes[4..], &body);
}

fn sample_features() -> Features {
    Features {
        header: header(1_700_000_000, 123_456_789, "left_camera"),
        image_width: 640,
        image_height: 480,
        algorithm: "orb".into(),
        x: vec![1.5, 600.25],
        y: vec![2.0, 470.0],
        size: vec![31.0, 44.64],
        angle: vec![0.0, 359.5],
        response: vec![1e-4, 3.0],
        octave: vec![0, 2],
        descriptor_type: "orb256".into(),
        descriptor_size: 32,
        descriptors: (0..64).collect(),
    }
}

#[test]
fn every_message_round_trips() {
    let features = sample_features();
    assert_eq!(
        decode::<Features>(&encode(&features).unwrap()).unwrap(),
        features
    );

    let matches = Matches {
        header: header(5, 6, "left"),
        train_header: header(5, 7, "right"),
        mode: "stereo".into(),
        query_idx: vec![0, 7, 9],
        train_idx: vec![3, 1, 4],
        distance: vec![12.0, 30.0, 64.0],
    };
    assert_eq!(
        decode::<Matches>(&encode(&matches).unwrap()).unwrap(),
        matches
    );

    let image = Image {
        header: header(3, 4, "cam"),
        height: 2,
        width: 3,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: 9,
        data: (0..18).collect::<Vec<u8>>().into(),
    };
    assert_eq!(decode::<Image>(&encode(&image).unwrap()).unwrap(), image);

    let diagnostics = DiagnosticArray {
        header: header(8, 9, ""),
        status: vec![DiagnosticStatus {
            level: DiagnosticStatus::OK,
            name: "orbsift".into(),
            message: "running".into(),
            hardware_id: "cpu".into(),
            values: vec![KeyValue {
                key: "fps".into(),
                value: "30.0".into(),
            }],
        }],
    };
    let decoded = decode::<DiagnosticArray>(&encode(&diagnostics).unwrap()).unwrap();
    assert_eq!(decoded, diagnostics);
}

#[test]
fn truncated_bytes_are_an_error_naming_the_message() {
    let bytes = encode(&sample_features()).unwrap();
    for cut in [0, 3, 10, bytes.len() / 2, bytes.len() - 1] {
        let err = decode::<Features>(&bytes[..cut]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Transport(TransportError::CdrDecode {
                    message: "Features",
                    ..
                })
            ),
            "{err}"
        );
    }
}

#[test]
fn big_endian_cdr_decodes_and_an_unknown_representation_is_an_error() {
    let features = sample_features();
    let big_endian = cdr::serialize::<_, _, cdr::CdrBe>(&features, cdr::Infinite).unwrap();
    assert_eq!(big_endian[1], 0);
    assert_eq!(decode::<Features>(&big_endian).unwrap(), features);

    let mut unknown = encode(&features).unwrap();
    unknown[1] = 7;
    let err = decode::<Features>(&unknown).unwrap_err();
    assert!(
        err.one_line().contains("representation 7"),
        "{}",
        err.one_line()
    );
}

#[test]
fn dds_type_names_follow_rmw() {
    assert_eq!(
        Features::dds_type_name(),
        "orbsift_msgs::msg::dds_::Features_"
    );
    assert_eq!(Image::dds_type_name(), "sensor_msgs::msg::dds_::Image_");
}

fn image(encoding: &str, width: u32, height: u32, step: u32, data: Vec<u8>) -> Image {
    Image {
        header: header(0, 0, "cam"),
        height,
        width,
        encoding: encoding.into(),
        is_bigendian: 0,
        step,
        data: data.into(),
    }
}

#[test]
fn images_convert_to_grey_and_bad_ones_say_why() {
    let padded = image("mono8", 2, 2, 3, vec![1, 2, 0, 3, 4, 0]);
    assert_eq!(gray_from_image(&padded, 100).unwrap().data(), &[1, 2, 3, 4]);

    let mut big_endian = image("mono16", 1, 1, 2, vec![0xab, 0x01]);
    big_endian.is_bigendian = 1;
    assert_eq!(gray_from_image(&big_endian, 100).unwrap().data(), &[0xab]);

    let too_many = image("mono8", 11, 10, 11, vec![0; 110]);
    let err = gray_from_image(&too_many, 100).unwrap_err().to_string();
    assert!(err.contains("max_image_pixels"), "{err}");

    let unknown = image("bayer_rggb8", 2, 2, 2, vec![0; 4]);
    assert!(matches!(
        gray_from_image(&unknown, 100),
        Err(Error::Image(ImageError::UnsupportedEncoding(_)))
    ));
    // Sizes whose product overflows u32 are still counted exactly.
    let huge = image("mono8", u32::MAX, u32::MAX, u32::MAX, vec![]);
    assert!(gray_from_image(&huge, 8192 * 8192).is_err());
}

#[test]
fn features_message_carries_the_header_and_every_keypoint() {
    let mut keypoints = Keypoints::with_capacity(2);
    keypoints.push(10.0, 20.0, 31.0, 90.0, 0.5, 0);
    keypoints.push(30.0, 40.0, 37.2, 180.0, 0.25, 1);
    let features = types::Features {
        width: 64,
        height: 48,
        keypoints,
        descriptors: Descriptors {
            kind: DescriptorKind::Orb256,
            data: (0..64).collect(),
        },
    };
    let msg = features_message(header(7, 8, "cam"), Algorithm::Orb, &features);
    assert_eq!(msg.header, header(7, 8, "cam"));
    assert_eq!((msg.image_width, msg.image_height), (64, 48));
    assert_eq!(msg.algorithm, "orb");
    assert_eq!(msg.x, vec![10.0, 30.0]);
    assert_eq!(msg.octave, vec![0, 1]);
    assert_eq!(msg.descriptor_type, "orb256");
    assert_eq!(
        msg.descriptors.len(),
        msg.x.len() * msg.descriptor_size as usize
    );
}

#[test]
fn image_data_is_encoded_as_a_cdr_sequence_of_bytes() {
    let data: Vec<u8> = (0..=255).collect();
    let bytes = encode(&image("mono8", 16, 16, 16, data.clone())).unwrap();
    // sequence<uint8>, as every other DDS stack writes it: the element count, then the
    // elements verbatim, the message ending with them.
    let (head, tail) = bytes.split_at(bytes.len() - data.len());
    assert_eq!(tail, &data[..]);
    assert_eq!(&head[head.len() - 4..], &256u32.to_le_bytes());
}

mod sequence_cdr {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::*;
    use crate::Extractor;

    /// What serde writes through the `cdr` crate: the encoding the sequence writer
    /// must reproduce byte for byte.
    fn serde_cdr<M: Serialize>(message: &M) -> Vec<u8> {
        cdr::serialize::<_, _, cdr::CdrLe>(message, cdr::Infinite).unwrap()
    }

    fn any_header() -> impl Strategy<Value = Header> {
        (any::<i32>(), any::<u32>(), ".{0,9}").prop_map(|(sec, nanosec, frame_id)| Header {
            stamp: Time { sec, nanosec },
            frame_id,
        })
    }

    proptest! {
        /// Strings of every length modulo 4 and arrays of any length, so each field
        /// meets every alignment.
        #[test]
        fn features_are_the_bytes_serde_writes(
            header in any_header(),
            width in any::<u32>(),
            algorithm in ".{0,6}",
            floats in vec(vec(any::<f32>(), 0..9), 5),
            octave in vec(any::<i32>(), 0..9),
            descriptor_type in ".{0,7}",
            descriptor_size in any::<u32>(),
            descriptors in vec(any::<u8>(), 0..70),
        ) {
            let message = Features {
                header,
                image_width: width,
                image_height: width / 3,
                algorithm,
                x: floats[0].clone(),
                y: floats[1].clone(),
                size: floats[2].clone(),
                angle: floats[3].clone(),
                response: floats[4].clone(),
                octave,
                descriptor_type,
                descriptor_size,
                descriptors,
            };
            let bytes = encode(&message).unwrap();
            prop_assert_eq!(&bytes, &serde_cdr(&message));
            prop_assert_eq!(decode::<Features>(&bytes).unwrap(), message);
        }

        #[test]
        fn matches_are_the_bytes_serde_writes(
            header in any_header(),
            train_header in any_header(),
            mode in ".{0,9}",
            query_idx in vec(any::<u32>(), 0..9),
            train_idx in vec(any::<u32>(), 0..9),
            distance in vec(any::<f32>(), 0..9),
        ) {
            let message = Matches { header, train_header, mode, query_idx, train_idx, distance };
            let bytes = encode(&message).unwrap();
            prop_assert_eq!(&bytes, &serde_cdr(&message));
        }
    }

    #[test]
    fn a_frames_features_are_the_bytes_serde_writes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/graf1.png");
        let image = crate::image::GrayImage::open(&path).unwrap();
        let features = crate::cpu::orb::OrbExtractor::new(Default::default())
            .unwrap()
            .extract(&image)
            .unwrap();
        let message = features_message(header(1, 2, "camera"), Algorithm::Orb, &features);
        assert!(message.x.len() > 400);
        assert_eq!(encode(&message).unwrap(), serde_cdr(&message));
    }
}
