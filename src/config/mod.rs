//! Every parameter of the CLI and the node, with its default: the single home of defaults.
//!
//! Parameters have dotted names (`orb.n_features`) that are the same in YAML files,
//! on the command line (`--set orb.n_features=1000`) and as ROS parameters. Files
//! are in the ROS 2 parameter form (`/**: ros__parameters: {...}`); a plain mapping
//! of the same keys is accepted too. Loading layers defaults, then the file, then
//! `--set` overrides, rejects unknown names, then [`Config::validate`]s the ranges.
//! [`Config`] is what the library reads; [`NodeConfig`] adds the node's own settings.

mod node;
mod parameters;

pub use node::{ImageTransport, InputConfig, InputSource, MatchMode, NodeConfig, NodeMatchConfig};
pub use parameters::{spec_of, Change, Range, Spec, Value, ORB_MAX_FEATURES, SPECS};

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_yaml::{Mapping, Value as Yaml};

use crate::error::{ConfigError, Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    Orb,
    Sift,
}

impl Algorithm {
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Orb => "orb",
            Algorithm::Sift => "sift",
        }
    }
}

/// Where extraction runs. `auto` uses CUDA when a GPU is usable, else the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    Auto,
    Cpu,
    Cuda,
}

/// How the CUDA backend holds frames: `unified` (host and device share memory,
/// the Jetson way), `device` (device buffers with pinned staging), `auto` picks
/// `unified` on integrated GPUs and `device` on discrete ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMode {
    Auto,
    Unified,
    Device,
}

/// Which score ranks ORB corners.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrbScore {
    /// Harris corner measure, k = 0.04, 7x7 window (OpenCV's default).
    Harris,
    /// The FAST score: the largest threshold at which the pixel is still a corner.
    Fast,
}

/// How ORB keypoints are spread over each pyramid level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// ORB-SLAM style: even coverage over cells of `grid_cell_size` pixels.
    Grid,
    /// OpenCV style: the strongest responses of the level.
    TopResponse,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OrbConfig {
    /// Keypoints wanted over all levels.
    pub n_features: u32,
    pub n_levels: u32,
    /// Ratio between the sides of consecutive pyramid levels.
    pub scale_factor: f64,
    /// FAST threshold: ring pixels must differ from the centre by more than this.
    pub fast_threshold: u32,
    /// Threshold retried in a grid cell where `fast_threshold` finds no corner.
    pub min_fast_threshold: u32,
    /// Keypoints closer than this to a level's border are dropped.
    pub edge_threshold: u32,
    /// Side of the described patch; the learned rBRIEF pattern is defined for 31.
    pub patch_size: u32,
    pub score: OrbScore,
    pub distribution: Distribution,
    /// Nominal side of a grid cell, in pixels of the level.
    pub grid_cell_size: u32,
}

impl Default for OrbConfig {
    fn default() -> Self {
        Self {
            n_features: 2000,
            n_levels: 8,
            scale_factor: 1.2,
            fast_threshold: 20,
            min_fast_threshold: 7,
            edge_threshold: 31,
            patch_size: 31,
            score: OrbScore::Harris,
            distribution: Distribution::Grid,
            grid_cell_size: 30,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SiftConfig {
    pub n_octave_layers: u32,
    pub contrast_threshold: f64,
    pub edge_threshold: f64,
    pub sigma: f64,
    /// Start at octave -1 (the input upsampled twice), as OpenCV does.
    pub upscale: bool,
    /// Upsample with input pixel `x` at `2x` (OpenCV's `enable_precise_upscale`, Lowe's
    /// and VLFeat's doubling) instead of OpenCV's default half-pixel `resize`, whose
    /// keypoints sit 0.25 px off the image content.
    pub precise_upscale: bool,
    /// Keep only the strongest keypoints; 0 keeps all.
    pub max_features: u32,
    /// Hellinger-normalised descriptors (Arandjelovic & Zisserman 2012).
    pub root_sift: bool,
}

impl Default for SiftConfig {
    fn default() -> Self {
        Self {
            n_octave_layers: 3,
            contrast_threshold: 0.04,
            edge_threshold: 10.0,
            sigma: 1.6,
            upscale: true,
            precise_upscale: false,
            max_features: 0,
            root_sift: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MatchConfig {
    /// Lowe ratio: keep a match when best < ratio * second best. 1 disables the test.
    pub ratio: f64,
    /// Keep only matches that are each other's best in both directions.
    pub cross_check: bool,
    /// Reject matches farther than this (Hamming bits or L2); 0 means no limit.
    pub max_distance: f64,
}

impl Default for MatchConfig {
    fn default() -> Self {
        Self {
            ratio: 0.8,
            cross_check: true,
            max_distance: 0.0,
        }
    }
}

/// The library's parameters, grouped as their dotted names are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub algorithm: Algorithm,
    pub backend: Backend,
    pub memory: MemoryMode,
    /// CUDA: the SMs the pipelines run on (a green context where the driver has them); 0: all.
    pub sm_limit: u32,
    /// Frames with more pixels than this are rejected before any allocation.
    pub max_image_pixels: u64,
    pub orb: OrbConfig,
    pub sift: SiftConfig,
    pub matching: MatchConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::Orb,
            backend: Backend::Auto,
            memory: MemoryMode::Auto,
            sm_limit: 0,
            max_image_pixels: crate::image::DEFAULT_MAX_PIXELS,
            orb: OrbConfig::default(),
            sift: SiftConfig::default(),
            matching: MatchConfig::default(),
        }
    }
}

fn invalid(name: &str, reason: impl Into<String>) -> Error {
    Error::Config(ConfigError::Invalid {
        name: name.to_string(),
        reason: reason.into(),
    })
}

fn check_range<T: PartialOrd + std::fmt::Display + Copy>(
    name: &str,
    value: T,
    min: T,
    max: T,
) -> Result<()> {
    // Written so that NaN fails too.
    if value >= min && value <= max {
        Ok(())
    } else {
        Err(invalid(name, format!("{value} is outside [{min}, {max}]")))
    }
}

impl OrbConfig {
    pub fn validate(&self) -> Result<()> {
        parameters::check_ranges("orb", self)?;
        check_range(
            "orb.min_fast_threshold",
            self.min_fast_threshold,
            1,
            self.fast_threshold,
        )
    }
}

impl SiftConfig {
    pub fn validate(&self) -> Result<()> {
        parameters::check_ranges("sift", self)
    }
}

impl MatchConfig {
    pub fn validate(&self) -> Result<()> {
        parameters::check_ranges("matching", self)
    }
}

impl Config {
    /// `sm_limit` as the CUDA backend takes it: `None` for all SMs.
    pub fn sm_limit(&self) -> Option<u32> {
        (self.sm_limit > 0).then_some(self.sm_limit)
    }

    pub fn validate(&self) -> Result<()> {
        parameters::check("sm_limit", &Value::Integer(i64::from(self.sm_limit)))?;
        parameters::check(
            "max_image_pixels",
            &Value::Integer(i64::try_from(self.max_image_pixels).unwrap_or(i64::MAX)),
        )?;
        self.orb.validate()?;
        self.sift.validate()?;
        self.matching.validate()
    }

    /// Defaults, then the optional YAML file, then `key=value` overrides; validated.
    /// The node's own parameters (`input.*`, `matching.mode`) are unknown here: they
    /// are [`NodeConfig`]'s.
    pub fn load(file: Option<&Path>, overrides: &[String]) -> Result<Self> {
        let defaults = serde_yaml::to_value(Config::default()).expect("defaults serialise");
        let config: Config = from_tree(layered_tree(defaults, file, overrides)?, "")?;
        config.validate()?;
        Ok(config)
    }
}

/// `defaults`, then the parameters of the optional YAML file, then `key=value` overrides.
fn layered_tree(mut tree: Yaml, file: Option<&Path>, overrides: &[String]) -> Result<Yaml> {
    if let Some(path) = file {
        merge(&mut tree, parameters_of_file(path)?);
    }
    for item in overrides {
        merge(&mut tree, parse_override(item)?);
    }
    Ok(tree)
}

/// Reads the section `prefix` (`""` for the top level) of a parameter tree; a wrong or
/// unknown name is reported with its full dotted name.
fn from_tree<T: DeserializeOwned>(tree: Yaml, prefix: &str) -> Result<T> {
    let given = tree.clone();
    serde_path_to_error::deserialize(tree).map_err(|err| {
        let inner_path = err.path().to_string();
        let path = match (prefix, inner_path.as_str()) {
            (_, "." | "") => prefix.to_string(),
            ("", inner) => inner.to_string(),
            (prefix, inner) => format!("{prefix}.{inner}"),
        };
        let text = err.into_inner().to_string();
        if let Some(field) = unknown_field(&text) {
            // The path already ends with the unknown key when serde visited it.
            let name = if path.is_empty() {
                field
            } else if path == field || path.ends_with(&format!(".{field}")) {
                path
            } else {
                format!("{path}.{field}")
            };
            let relative = name.strip_prefix(prefix).unwrap_or(&name);
            Error::Config(ConfigError::Unknown(down_to_a_leaf(
                &given,
                relative,
                name.clone(),
            )))
        } else {
            invalid(&path, text)
        }
    })
}

/// `name` extended to the first parameter under it when it names a whole section
/// (`input` to `input.fps`), so the error shows a name the user wrote.
fn down_to_a_leaf(tree: &Yaml, relative: &str, mut name: String) -> String {
    let mut node = tree;
    for part in relative.split('.').filter(|part| !part.is_empty()) {
        match node.get(part) {
            Some(child) => node = child,
            None => return name,
        }
    }
    while let Yaml::Mapping(map) = node {
        let Some((Yaml::String(key), child)) = map.iter().next() else {
            break;
        };
        name = format!("{name}.{key}");
        node = child;
    }
    name
}

/// serde reports unknown fields as "unknown field `name`, expected ...".
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

/// Reads a YAML file and returns its parameters as one nested mapping.
fn parameters_of_file(path: &Path) -> Result<Yaml> {
    let text = std::fs::read_to_string(path).map_err(|source| {
        Error::Config(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })
    })?;
    let doc: Yaml = serde_yaml::from_str(&text).map_err(|source| {
        Error::Config(ConfigError::Yaml {
            path: path.to_path_buf(),
            source,
        })
    })?;
    let not_a_mapping = || {
        Error::Config(ConfigError::Invalid {
            name: path.display().to_string(),
            reason: "a parameter file must be a YAML mapping".into(),
        })
    };
    let Yaml::Mapping(top) = doc else {
        return match doc {
            Yaml::Null => Ok(Yaml::Mapping(Mapping::new())),
            _ => Err(not_a_mapping()),
        };
    };
    // ROS form: node-name keys (`/**`, `/orbsift`, ...) each holding `ros__parameters`.
    let ros_sections: Vec<&Yaml> = top
        .values()
        .filter_map(|v| v.get("ros__parameters"))
        .collect();
    let mut params = Yaml::Mapping(Mapping::new());
    if ros_sections.is_empty() {
        merge(&mut params, expand_dotted(Yaml::Mapping(top))?);
    } else {
        for section in ros_sections {
            if !section.is_mapping() {
                return Err(not_a_mapping());
            }
            merge(&mut params, expand_dotted(section.clone())?);
        }
    }
    Ok(params)
}

/// `orb.n_features: 5` and `orb: {n_features: 5}` mean the same; make them the latter.
fn expand_dotted(value: Yaml) -> Result<Yaml> {
    let Yaml::Mapping(map) = value else {
        return Ok(value);
    };
    let mut out = Yaml::Mapping(Mapping::new());
    for (key, child) in map {
        let Some(key) = key.as_str() else {
            return Err(Error::Config(ConfigError::Unknown(format!("{key:?}"))));
        };
        merge(&mut out, nest(key, expand_dotted(child)?));
    }
    Ok(out)
}

fn nest(dotted: &str, leaf: Yaml) -> Yaml {
    dotted.rsplit('.').fold(leaf, |inner, part| {
        let mut map = Mapping::new();
        map.insert(Yaml::String(part.to_string()), inner);
        Yaml::Mapping(map)
    })
}

/// `orb.n_features=1000` → `{orb: {n_features: 1000}}`; the value is a YAML scalar.
fn parse_override(item: &str) -> Result<Yaml> {
    let (key, raw) = item.split_once('=').ok_or_else(|| {
        Error::Config(ConfigError::Invalid {
            name: item.to_string(),
            reason: "expected key=value".into(),
        })
    })?;
    let key = key.trim();
    if key.is_empty() {
        return Err(invalid(item, "empty parameter name"));
    }
    let value: Yaml = serde_yaml::from_str(raw).map_err(|e| invalid(key, e.to_string()))?;
    if value.is_mapping() || value.is_sequence() {
        return Err(invalid(key, "expected a single value"));
    }
    Ok(nest(key, value))
}

/// Overlays `top` onto `base`, recursing into mappings.
fn merge(base: &mut Yaml, top: Yaml) {
    match (base, top) {
        (Yaml::Mapping(base), Yaml::Mapping(top)) => {
            for (key, value) in top {
                match base.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn sets(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn defaults_are_valid_and_match_the_documented_values() {
        let c = Config::load(None, &[]).unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.orb.n_features, 2000);
        assert_eq!(c.orb.n_levels, 8);
        assert_eq!(c.orb.distribution, Distribution::Grid);
        assert_eq!(c.matching.ratio, 0.8);
    }

    #[test]
    fn ros_form_nested_and_dotted_keys_and_overrides_layer_in_order() {
        let f = file(
            "/**:\n  ros__parameters:\n    orb:\n      n_features: 500\n      score: fast\n    matching.ratio: 0.7\n",
        );
        let c = Config::load(Some(f.path()), &sets(&["orb.n_features=900"])).unwrap();
        assert_eq!(c.orb.n_features, 900);
        assert_eq!(c.orb.score, OrbScore::Fast);
        assert_eq!(c.matching.ratio, 0.7);
        assert_eq!(c.orb.n_levels, 8);
    }

    #[test]
    fn plain_mapping_is_accepted() {
        let f = file("algorithm: sift\nsift:\n  upscale: false\n");
        let c = Config::load(Some(f.path()), &[]).unwrap();
        assert_eq!(c.algorithm, Algorithm::Sift);
        assert!(!c.sift.upscale);
    }

    #[test]
    fn every_bad_input_names_the_parameter() {
        let cases: &[(&[&str], &str)] = &[
            (&["orb.n_feature=3"], "orb.n_feature"),
            (&["orb.scale_factor=.nan"], "orb.scale_factor"),
            (&["orb.scale_factor=1.0"], "orb.scale_factor"),
            (&["orb.n_features=0"], "orb.n_features"),
            (&["orb.n_features=many"], "orb.n_features"),
            (&["orb.score=sobel"], "orb.score"),
            (&["orb.patch_size=15"], "orb.patch_size"),
            (&["orb.min_fast_threshold=30"], "orb.min_fast_threshold"),
            (&["matching.ratio=1.5"], "matching.ratio"),
            (&["matching.max_distance=-1"], "matching.max_distance"),
            (&["sift.sigma=.inf"], "sift.sigma"),
            (&["input.fps=-1"], "input.fps"),
            (&["input.width=100000"], "input.width"),
            (&["input.source=camera", "input.device="], "input.device"),
            (
                &["input.source=camera", "input.device=\"\""],
                "input.device",
            ),
            (&["matching.mode=sideways"], "matching.mode"),
            (&["matching.sync_tolerance=-1"], "matching.sync_tolerance"),
            (&["bogus=1"], "bogus"),
            (&["novalue"], "novalue"),
        ];
        for (items, name) in cases {
            let err = NodeConfig::load(None, &sets(items))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name), "{items:?}: {err}");
            // The library's own parameters are checked as the node checks them.
            let node_only = ["input.", "matching.mode", "matching.sync_tolerance"];
            if !node_only.iter().any(|prefix| name.starts_with(prefix)) {
                let err = Config::load(None, &sets(items)).unwrap_err().to_string();
                assert!(err.contains(name), "{items:?}: {err}");
            }
        }
    }

    #[test]
    fn unknown_parameters_are_named_exactly_once() {
        for (item, expected) in [
            ("orb.n_feature=3", "orb.n_feature"),
            ("bogus=1", "bogus"),
            ("input.bogus=1", "input.bogus"),
            ("matching.bogus=1", "matching.bogus"),
        ] {
            match NodeConfig::load(None, &sets(&[item])) {
                Err(Error::Config(ConfigError::Unknown(name))) => assert_eq!(name, expected),
                other => panic!("{item}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_node_settings_are_unknown_to_the_library_and_kept_apart_by_the_node() {
        for item in [
            "input.fps=5",
            "matching.mode=none",
            "matching.sync_tolerance=0.01",
        ] {
            let name = item.split('=').next().unwrap();
            match Config::load(None, &sets(&[item])) {
                Err(Error::Config(ConfigError::Unknown(unknown))) => assert_eq!(unknown, name),
                other => panic!("{item}: {other:?}"),
            }
        }
        let items = sets(&["matching.mode=stereo", "matching.ratio=0.7", "input.fps=5"]);
        let c = NodeConfig::load(None, &items).unwrap();
        assert_eq!(c.matching.mode, MatchMode::Stereo);
        assert_eq!(c.library.matching.ratio, 0.7);
        assert_eq!(c.input.fps, 5.0);
        assert_eq!(
            c.library,
            Config::load(None, &sets(&["matching.ratio=0.7"])).unwrap()
        );
    }

    #[test]
    fn a_camera_index_may_be_a_number_or_text() {
        for item in ["input.device=2", "input.device=\"2\""] {
            let c = NodeConfig::load(None, &sets(&["input.source=camera", item])).unwrap();
            assert_eq!(c.input.device, "2", "{item}");
        }
        let items = sets(&["input.loop=true", "input.realtime=false"]);
        let c = NodeConfig::load(None, &items).unwrap();
        assert!(c.input.looping && !c.input.realtime);
        let back = NodeConfig::load(Some(file(&c.to_ros_yaml()).path()), &[]).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn bad_yaml_is_reported_with_the_file() {
        let f = file("/**:\n  ros__parameters:\n    orb: [unclosed\n");
        let err = Config::load(Some(f.path()), &[]).unwrap_err();
        assert!(
            matches!(err, Error::Config(ConfigError::Yaml { .. })),
            "{err}"
        );
        let f = file("- 1\n- 2\n");
        assert!(Config::load(Some(f.path()), &[]).is_err());
    }
}
