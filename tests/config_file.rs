//! `config/orb.yaml` documents the defaults; these tests keep it from drifting away
//! from `NodeConfig::default()`, the one place defaults are defined.

use std::path::PathBuf;

use orbsift::config::NodeConfig;
use serde_yaml::Value;

fn orb_yaml() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config/orb.yaml")
}

#[test]
fn orb_yaml_loads_to_exactly_the_defaults() {
    let loaded = NodeConfig::load(Some(&orb_yaml()), &[]).unwrap();
    assert_eq!(loaded, NodeConfig::default());
}

/// Loading alone would not notice a parameter missing from the file (it would fall
/// back to its default), so check that every orb.* and matching.* name is written out,
/// each with its comment.
#[test]
fn orb_yaml_lists_every_orb_and_matching_parameter_with_a_comment() {
    let text = std::fs::read_to_string(orb_yaml()).unwrap();
    let file: Value = serde_yaml::from_str(&text).unwrap();
    let written = &file["/**"]["ros__parameters"];
    let defaults = serde_yaml::from_str::<Value>(&NodeConfig::default().to_ros_yaml()).unwrap();
    let defaults = &defaults["/**"]["ros__parameters"];
    for section in ["orb", "matching"] {
        let Value::Mapping(names) = &defaults[section] else {
            panic!("{section} is not a mapping in the serialised defaults");
        };
        for name in names.keys().map(|k| k.as_str().unwrap()) {
            assert!(
                written[section].get(name).is_some(),
                "{section}.{name} is missing from config/orb.yaml"
            );
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{name}:")))
                .unwrap();
            assert!(
                line.contains(" # "),
                "{section}.{name} has no comment: {line:?}"
            );
        }
    }
}

/// `config/camera.yaml` writes out every input.* parameter, each with its comment.
#[test]
fn camera_yaml_lists_every_input_parameter_with_a_comment() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config/camera.yaml");
    let loaded = NodeConfig::load(Some(&path), &[]).unwrap();
    assert_eq!(loaded.input.source, orbsift::config::InputSource::Camera);
    assert_eq!(loaded.library.orb, NodeConfig::default().library.orb);
    let text = std::fs::read_to_string(&path).unwrap();
    let Value::Mapping(names) = &serde_yaml::to_value(NodeConfig::default().input).unwrap() else {
        panic!("input is not a mapping in the serialised defaults");
    };
    for name in names.keys().map(|k| k.as_str().unwrap()) {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("input.{name} is missing from config/camera.yaml"));
        assert!(
            line.contains(" # "),
            "input.{name} has no comment: {line:?}"
        );
    }
}
