//! The parameters as ROS sees them: each dotted name with its type, description and
//! range, and whether it may change while the node runs. The ranges here are the
//! ones [`NodeConfig::validate`] enforces, so `describe_parameters` tells what `set` accepts.

use serde::Serialize;
use serde_yaml::Value as Yaml;

use super::{invalid, merge, nest, NodeConfig};
use crate::error::{ConfigError, Error, Result};

/// The most keypoints `orb.n_features` may ask for (the CUDA ORB packs a keypoint's
/// index below a distance in one word; `cuda::abi::BACKWARD_QUERY_BITS` checks it fits).
pub const ORB_MAX_FEATURES: i64 = 1_000_000;

/// Whether a running node takes a new value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Applied from the next frame.
    Live,
    /// Read at start-up only: the backend, the input and the matching mode shape
    /// what the node builds.
    Restart,
}

/// The values a numeric parameter may take, bounds included unless said.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    Integer {
        from: i64,
        to: i64,
    },
    Float {
        from: f64,
        to: f64,
        exclusive_from: bool,
    },
}

/// One parameter: what `describe_parameters` answers.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub name: &'static str,
    pub description: &'static str,
    pub change: Change,
    pub range: Option<Range>,
    /// Limits no range can say, in words.
    pub constraints: &'static str,
}

const fn int(from: i64, to: i64) -> Option<Range> {
    Some(Range::Integer { from, to })
}

const fn float(from: f64, to: f64) -> Option<Range> {
    Some(Range::Float {
        from,
        to,
        exclusive_from: false,
    })
}

const fn float_above(from: f64, to: f64) -> Option<Range> {
    Some(Range::Float {
        from,
        to,
        exclusive_from: true,
    })
}

const fn spec(
    name: &'static str,
    change: Change,
    range: Option<Range>,
    description: &'static str,
) -> Spec {
    Spec {
        name,
        description,
        change,
        range,
        constraints: "",
    }
}

const fn constrained(spec: Spec, constraints: &'static str) -> Spec {
    Spec {
        constraints,
        ..spec
    }
}

use Change::{Live, Restart};

/// Every parameter; a test checks that this lists exactly the fields of [`NodeConfig`].
pub const SPECS: &[Spec] = &[
    constrained(
        spec("algorithm", Restart, None, "feature algorithm"),
        "orb or sift",
    ),
    constrained(
        spec("backend", Restart, None, "where extraction runs"),
        "auto (CUDA when a GPU is usable, else the CPU), cpu or cuda",
    ),
    constrained(
        spec("memory", Restart, None, "CUDA frame memory"),
        "auto, unified (Jetson) or device (discrete GPUs)",
    ),
    spec(
        "sm_limit",
        Restart,
        int(0, 1024),
        "CUDA: SMs the pipelines run on (a green context where the driver has them); 0: all",
    ),
    spec(
        "max_image_pixels",
        Live,
        int(1, 1 << 32),
        "frames with more pixels are rejected before any allocation",
    ),
    spec(
        "orb.n_features",
        Live,
        int(1, ORB_MAX_FEATURES),
        "keypoints wanted over all pyramid levels",
    ),
    spec("orb.n_levels", Live, int(1, 32), "pyramid levels"),
    spec(
        "orb.scale_factor",
        Live,
        float_above(1.0, 4.0),
        "ratio between the sides of consecutive pyramid levels",
    ),
    spec(
        "orb.fast_threshold",
        Live,
        int(1, 254),
        "FAST: ring pixels must differ from the centre by more than this",
    ),
    constrained(
        spec(
            "orb.min_fast_threshold",
            Live,
            int(1, 254),
            "FAST threshold retried in a grid cell where fast_threshold finds nothing",
        ),
        "at most orb.fast_threshold",
    ),
    spec(
        "orb.edge_threshold",
        Live,
        int(19, 1024),
        "keypoints closer than this to a level's border are dropped",
    ),
    constrained(
        spec(
            "orb.patch_size",
            Live,
            int(31, 31),
            "side of the described patch",
        ),
        "the learned rBRIEF pattern is defined for 31 only",
    ),
    constrained(
        spec("orb.score", Live, None, "corner ranking"),
        "harris (k = 0.04, 7x7) or fast",
    ),
    constrained(
        spec(
            "orb.distribution",
            Live,
            None,
            "how keypoints spread over a level",
        ),
        "grid (ORB-SLAM even coverage) or top_response (OpenCV)",
    ),
    spec(
        "orb.grid_cell_size",
        Live,
        int(8, 1024),
        "nominal grid cell side, in pixels of the level",
    ),
    spec(
        "sift.n_octave_layers",
        Live,
        int(1, 10),
        "scales per octave",
    ),
    spec(
        "sift.contrast_threshold",
        Live,
        float(1e-6, 1.0),
        "DoG contrast threshold",
    ),
    spec(
        "sift.edge_threshold",
        Live,
        float(1.0, 1e3),
        "principal curvature ratio limit",
    ),
    spec(
        "sift.sigma",
        Live,
        float(0.1, 10.0),
        "blur of the base image",
    ),
    spec(
        "sift.upscale",
        Live,
        None,
        "start at octave -1 (the input upsampled twice), as OpenCV does",
    ),
    spec(
        "sift.precise_upscale",
        Live,
        None,
        "upsample with input pixel x at 2x (no 0.25 px keypoint bias)",
    ),
    spec(
        "sift.max_features",
        Live,
        int(0, 1_000_000),
        "keep only the strongest keypoints; 0 keeps all",
    ),
    spec(
        "sift.root_sift",
        Live,
        None,
        "Hellinger-normalised descriptors",
    ),
    spec(
        "matching.ratio",
        Live,
        float_above(0.0, 1.0),
        "Lowe ratio: keep a match when best < ratio x second best; 1 disables the test",
    ),
    spec(
        "matching.cross_check",
        Live,
        None,
        "keep only matches that are each other's best both ways",
    ),
    spec(
        "matching.max_distance",
        Live,
        float(0.0, 1e9),
        "reject matches farther than this (Hamming bits or L2); 0 = no limit",
    ),
    constrained(
        spec(
            "matching.mode",
            Restart,
            None,
            "what each frame is matched against",
        ),
        "none, temporal (previous frame) or stereo (left vs right)",
    ),
    spec(
        "matching.sync_tolerance",
        Live,
        float(0.0, 10.0),
        "stereo: largest left/right stamp difference, seconds",
    ),
    constrained(
        spec("input.source", Restart, None, "where frames come from"),
        "topic or camera",
    ),
    constrained(
        spec(
            "input.transport",
            Restart,
            None,
            "how images arrive on the input topics",
        ),
        "raw (image) or compressed (image/compressed: JPEG, PNG)",
    ),
    spec(
        "input.device",
        Restart,
        None,
        "camera index, video file, image sequence or GStreamer pipeline",
    ),
    spec(
        "input.width",
        Restart,
        int(0, crate::image::MAX_SIDE as i64),
        "requested camera frame width; 0 keeps the camera's",
    ),
    spec(
        "input.height",
        Restart,
        int(0, crate::image::MAX_SIDE as i64),
        "requested camera frame height; 0 keeps the camera's",
    ),
    spec(
        "input.fps",
        Restart,
        float(0.0, 1000.0),
        "requested camera rate, or a file's playback rate; 0 keeps the source's",
    ),
    spec("input.loop", Restart, None, "files: start again at the end"),
    spec(
        "input.realtime",
        Restart,
        None,
        "files: play at the frame rate, skipping when late",
    ),
    spec(
        "input.frame_id",
        Restart,
        None,
        "header.frame_id of camera input",
    ),
    spec(
        "input.publish_image",
        Restart,
        None,
        "camera input: also publish each captured frame on image",
    ),
];

/// The spec of `name`.
pub fn spec_of(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|spec| spec.name == name)
}

/// A parameter's value, typed as ROS types it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Integer(i64),
    Double(f64),
    String(String),
}

impl Value {
    /// The ROS type's name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Bool(_) => "bool",
            Value::Integer(_) => "integer",
            Value::Double(_) => "double",
            Value::String(_) => "string",
        }
    }

    fn from_yaml(value: &Yaml) -> Option<Self> {
        Some(match value {
            Yaml::Bool(b) => Value::Bool(*b),
            Yaml::Number(n) if n.is_f64() => Value::Double(n.as_f64()?),
            Yaml::Number(n) => Value::Integer(n.as_i64()?),
            Yaml::String(s) => Value::String(s.clone()),
            _ => return None,
        })
    }

    fn to_yaml(&self) -> Yaml {
        match self {
            Value::Bool(b) => Yaml::Bool(*b),
            Value::Integer(i) => Yaml::Number((*i).into()),
            Value::Double(d) => Yaml::Number((*d).into()),
            Value::String(s) => Yaml::String(s.clone()),
        }
    }
}

/// `(dotted name, value)` of every leaf of `tree`, under `prefix`.
fn flatten(prefix: &str, tree: &Yaml, out: &mut Vec<(String, Value)>) {
    match tree {
        Yaml::Mapping(map) => {
            for (key, child) in map {
                let key = key.as_str().unwrap_or_default();
                let name = match prefix {
                    "" => key.to_string(),
                    _ => format!("{prefix}.{key}"),
                };
                flatten(&name, child, out);
            }
        }
        leaf => {
            if let Some(value) = Value::from_yaml(leaf) {
                out.push((prefix.to_string(), value));
            }
        }
    }
}

/// The parameters of `section` (a config struct), named under `prefix`.
pub(super) fn parameters_of<T: Serialize>(prefix: &str, section: &T) -> Vec<(String, Value)> {
    let tree = serde_yaml::to_value(section).expect("a config section serialises");
    let mut out = Vec::new();
    flatten(prefix, &tree, &mut out);
    out
}

impl Range {
    fn contains(self, value: f64) -> bool {
        // Written so that NaN fails too.
        match self {
            Range::Integer { from, to } => value >= from as f64 && value <= to as f64,
            Range::Float {
                from,
                to,
                exclusive_from,
            } => (value > from || (!exclusive_from && value == from)) && value <= to,
        }
    }

    fn describe(self) -> String {
        match self {
            Range::Integer { from, to } => format!("[{from}, {to}]"),
            Range::Float {
                from,
                to,
                exclusive_from,
            } => format!("{}{from}, {to}]", if exclusive_from { "(" } else { "[" }),
        }
    }
}

impl Spec {
    /// Whether `value` is within this parameter's range.
    pub fn check(&self, value: &Value) -> Result<()> {
        let number = match value {
            Value::Integer(i) => *i as f64,
            Value::Double(d) => *d,
            _ => return Ok(()),
        };
        match self.range {
            Some(range) if !range.contains(number) => {
                let limit = match self.constraints {
                    "" => String::new(),
                    words => format!(" ({words})"),
                };
                Err(invalid(
                    self.name,
                    format!("{number} is outside {}{limit}", range.describe()),
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Checks `value` against the range of the parameter `name`.
pub(super) fn check(name: &str, value: &Value) -> Result<()> {
    spec_of(name).map_or(Ok(()), |spec| spec.check(value))
}

/// Checks every parameter of `section` (named under `prefix`) against its range.
pub(super) fn check_ranges<T: Serialize>(prefix: &str, section: &T) -> Result<()> {
    parameters_of(prefix, section)
        .iter()
        .try_for_each(|(name, value)| check(name, value))
}

impl NodeConfig {
    /// Every parameter with its current value.
    pub fn parameters(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        flatten("", &self.tree(), &mut out);
        out
    }

    /// The current value of `name`.
    pub fn parameter(&self, name: &str) -> Option<Value> {
        self.parameters()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, value)| value)
    }

    /// This configuration with `changes` made, as a running node takes them: each
    /// name must be a parameter that may change while running, each value of the
    /// parameter's type, and the result must validate. The first problem is the error.
    pub fn with_changes(&self, changes: &[(String, Value)]) -> Result<NodeConfig> {
        let mut tree = self.tree();
        for (name, value) in changes {
            let spec =
                spec_of(name).ok_or_else(|| Error::Config(ConfigError::Unknown(name.clone())))?;
            if spec.change == Change::Restart {
                return Err(invalid(
                    name,
                    "is read at start-up only: restart the node to change it",
                ));
            }
            let current = self
                .parameter(name)
                .ok_or_else(|| Error::Config(ConfigError::Unknown(name.clone())))?;
            if std::mem::discriminant(&current) != std::mem::discriminant(value) {
                return Err(invalid(
                    name,
                    format!(
                        "has type {}, not {}",
                        current.type_name(),
                        value.type_name()
                    ),
                ));
            }
            merge(&mut tree, nest(name, value.to_yaml()));
        }
        let config = NodeConfig::from_tree(tree)?;
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_has_exactly_one_spec() {
        let names: Vec<String> = NodeConfig::default()
            .parameters()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        let specs: Vec<&str> = SPECS.iter().map(|spec| spec.name).collect();
        let mut sorted_names = names.clone();
        sorted_names.sort();
        let mut sorted_specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        sorted_specs.sort();
        assert_eq!(sorted_names, sorted_specs);
    }

    #[test]
    fn the_described_range_is_what_loading_accepts() {
        for spec in SPECS {
            let Some(range) = spec.range else { continue };
            let (inside, outside) = match range {
                Range::Integer { from, to } => (
                    vec![from.to_string(), to.to_string()],
                    vec![(from - 1).to_string(), (to + 1).to_string()],
                ),
                Range::Float {
                    from,
                    to,
                    exclusive_from,
                } => {
                    let mut inside = vec![format!("{to:?}")];
                    let mut outside = vec![format!("{:?}", to * 1.001 + 1e-9), ".nan".into()];
                    if exclusive_from {
                        outside.push(format!("{from:?}"));
                    } else {
                        inside.push(format!("{from:?}"));
                        outside.push(format!("{:?}", from - 1e-3));
                    }
                    (inside, outside)
                }
            };
            // A range holds for the parameter alone: the rule min_fast_threshold <=
            // fast_threshold is kept out of the way.
            let base: &[&str] = match spec.name {
                "orb.fast_threshold" => &["orb.min_fast_threshold=1"],
                "orb.min_fast_threshold" => &["orb.fast_threshold=254"],
                _ => &[],
            };
            let base: Vec<String> = base.iter().map(|s| s.to_string()).collect();
            for value in inside {
                let item = format!("{}={value}", spec.name);
                let mut items = base.to_vec();
                items.push(item.clone());
                NodeConfig::load(None, &items).unwrap_or_else(|e| panic!("{item} refused: {e}"));
            }
            for value in outside {
                let item = format!("{}={value}", spec.name);
                let err = NodeConfig::load(None, std::slice::from_ref(&item))
                    .expect_err(&item)
                    .to_string();
                assert!(err.contains(spec.name), "{item}: {err}");
            }
        }
    }

    #[test]
    fn live_changes_are_validated_and_restart_only_ones_refused_with_the_reason() {
        let config = NodeConfig::default();
        let changed = config
            .with_changes(&[
                ("orb.n_features".into(), Value::Integer(500)),
                ("matching.ratio".into(), Value::Double(0.7)),
                ("orb.score".into(), Value::String("fast".into())),
                ("matching.sync_tolerance".into(), Value::Double(0.01)),
            ])
            .unwrap();
        assert_eq!(changed.matching.sync_tolerance, 0.01);
        assert_eq!(changed.library.orb.n_features, 500);
        assert_eq!(changed.library.matching.ratio, 0.7);
        assert_eq!(changed.library.orb.score, super::super::OrbScore::Fast);

        for (name, value, reason) in [
            ("orb.scale_factor", Value::Double(f64::NAN), "outside"),
            ("orb.n_features", Value::Integer(0), "outside"),
            (
                "orb.n_features",
                Value::Double(10.0),
                "has type integer, not double",
            ),
            ("orb.score", Value::String("sobel".into()), "sobel"),
            (
                "orb.min_fast_threshold",
                Value::Integer(30),
                "orb.min_fast_threshold",
            ),
            ("algorithm", Value::String("sift".into()), "restart"),
            ("input.device", Value::String("1".into()), "restart"),
            ("matching.mode", Value::String("none".into()), "restart"),
            ("orb.no_such_thing", Value::Integer(1), "orb.no_such_thing"),
        ] {
            let err = config
                .with_changes(&[(name.into(), value)])
                .unwrap_err()
                .to_string();
            assert!(err.contains(reason), "{name}: {err}");
        }
    }
}
