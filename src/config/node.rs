//! The node's configuration: the library's [`Config`] plus what only the node reads
//! (`input.*`, `matching.mode`, `matching.sync_tolerance`).
//!
//! The parameter names and the file format are one flat set, the same as before the
//! split: [`NodeConfig::tree`] lays the node's own settings into the library's tree, and
//! [`NodeConfig::from_tree`] takes them out again before the library's part is read.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value as Yaml};

use super::{from_tree, layered_tree, parameters, Config};
use crate::error::Result;

/// What the node matches each frame against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchMode {
    None,
    /// Each frame against the previous one.
    Temporal,
    /// Left camera against right camera, paired by stamp.
    Stereo,
}

/// Where the node's frames come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputSource {
    /// `sensor_msgs/Image` topics.
    Topic,
    /// A camera or video opened by the node itself.
    Camera,
}

/// How images arrive on the input topics, named as `image_transport` names its plugins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageTransport {
    /// `sensor_msgs/Image` on `image`.
    Raw,
    /// `sensor_msgs/CompressedImage` (JPEG or PNG) on `image/compressed`.
    Compressed,
}

/// The node's input. `source` and `transport` concern topics, the rest `camera`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InputConfig {
    pub source: InputSource,
    pub transport: ImageTransport,
    /// A device index (`0`), a video file, an image sequence (`frames/%04d.png`) or a
    /// GStreamer pipeline (contains `!`, ends in `appsink`).
    #[serde(deserialize_with = "text_or_number")]
    pub device: String,
    /// Requested frame size and rate; 0 keeps the device's own. Files keep their size;
    /// `fps` sets their playback rate when `realtime`.
    pub width: u32,
    pub height: u32,
    pub fps: f64,
    /// Files and image sequences: start again at the end instead of stopping.
    #[serde(rename = "loop")]
    pub looping: bool,
    /// Files and image sequences: true plays at the frame rate and skips frames when
    /// processing is late; false processes every frame as fast as it can.
    pub realtime: bool,
    /// `header.frame_id` of the captured frames.
    pub frame_id: String,
    /// Also publish each captured frame on `image`.
    pub publish_image: bool,
}

impl Default for InputConfig {
    fn default() -> Self {
        Self {
            source: InputSource::Topic,
            transport: ImageTransport::Raw,
            device: "0".into(),
            width: 0,
            height: 0,
            fps: 0.0,
            looping: false,
            realtime: true,
            frame_id: "camera".into(),
            publish_image: false,
        }
    }
}

impl InputConfig {
    pub fn validate(&self) -> Result<()> {
        parameters::check_ranges("input", self)?;
        if self.source == InputSource::Camera {
            crate::camera::Device::parse(&self.device)?;
        }
        Ok(())
    }
}

/// The node's `matching.*` parameters beside the library's [`super::MatchConfig`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeMatchConfig {
    /// What the node matches against.
    pub mode: MatchMode,
    /// Stereo: the largest stamp difference, in seconds, of a left/right pair.
    pub sync_tolerance: f64,
}

impl Default for NodeMatchConfig {
    fn default() -> Self {
        Self {
            mode: MatchMode::Temporal,
            sync_tolerance: 0.005,
        }
    }
}

impl NodeMatchConfig {
    /// The names under `matching.` that belong to the node.
    const NAMES: [&str; 2] = ["mode", "sync_tolerance"];

    pub fn validate(&self) -> Result<()> {
        parameters::check_ranges("matching", self)
    }
}

/// Every parameter of `orbsift_node` (and of `orbsift config`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeConfig {
    /// Extraction and matching, as the library takes them.
    pub library: Config,
    pub input: InputConfig,
    pub matching: NodeMatchConfig,
}

impl NodeConfig {
    pub fn validate(&self) -> Result<()> {
        self.library.validate()?;
        self.matching.validate()?;
        self.input.validate()
    }

    /// Defaults, then the optional YAML file, then `key=value` overrides; validated.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Self> {
        let config = Self::from_tree(layered_tree(Self::default().tree(), file, overrides)?)?;
        config.validate()?;
        Ok(config)
    }

    /// All parameters as one tree, each under its dotted name.
    pub(super) fn tree(&self) -> Yaml {
        let mut tree = serde_yaml::to_value(&self.library).expect("a Config serialises");
        let node_matching = serde_yaml::to_value(&self.matching).expect("matching serialises");
        if let (Some(Yaml::Mapping(matching)), Yaml::Mapping(node)) =
            (tree.get_mut("matching"), node_matching)
        {
            matching.extend(node);
        }
        if let Yaml::Mapping(top) = &mut tree {
            let input = serde_yaml::to_value(&self.input).expect("input serialises");
            top.insert("input".into(), input);
        }
        tree
    }

    /// Reads a tree laid out as [`NodeConfig::tree`] writes it; a wrong or unknown name
    /// is named in full (`input.fps`, `matching.mode`).
    pub(super) fn from_tree(mut tree: Yaml) -> Result<Self> {
        let mut input = Yaml::Mapping(Mapping::new());
        let mut matching = Mapping::new();
        if let Yaml::Mapping(top) = &mut tree {
            if let Some(section) = top.remove("input") {
                input = section;
            }
            if let Some(Yaml::Mapping(library_matching)) = top.get_mut("matching") {
                for name in NodeMatchConfig::NAMES {
                    if let Some(value) = library_matching.remove(name) {
                        matching.insert(name.into(), value);
                    }
                }
            }
        }
        Ok(Self {
            library: from_tree(tree, "")?,
            input: from_tree(input, "input")?,
            matching: from_tree(Yaml::Mapping(matching), "matching")?,
        })
    }

    /// The parameters as a ROS 2 parameter file (`/**: ros__parameters: ...`), which
    /// [`NodeConfig::load`] reads back to the same values.
    pub fn to_ros_yaml(&self) -> String {
        let mut node = Mapping::new();
        node.insert("ros__parameters".into(), self.tree());
        let mut file = Mapping::new();
        file.insert("/**".into(), Yaml::Mapping(node));
        serde_yaml::to_string(&file).expect("a mapping of plain values serialises")
    }
}

/// `input.device: 0` (what `-p input.device:=0` gives) and `"0"` name the same camera.
fn text_or_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<String, D::Error> {
    match Yaml::deserialize(deserializer)? {
        Yaml::String(text) => Ok(text),
        Yaml::Number(number) => Ok(number.to_string()),
        other => Err(serde::de::Error::custom(format!(
            "expected a camera index, a path or a GStreamer pipeline, found {other:?}"
        ))),
    }
}
