//! The `--ros-args` subset that `ros2 run` and launch files pass, and ROS 2 name
//! resolution (namespace, `~`, remapping) of the node's topics.

use std::path::PathBuf;

use crate::error::{ConfigError, Error, Result};

/// The node's name and namespace, its parameter sources and its remapping rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RosArgs {
    pub node_name: String,
    /// Absolute, without a trailing slash except for the root `/`.
    pub namespace: String,
    pub params_files: Vec<PathBuf>,
    /// `name=value`, as [`crate::config::NodeConfig::load`] takes overrides.
    pub overrides: Vec<String>,
    remaps: Vec<(String, String)>,
}

/// `key:=value` split at `:=`.
fn assignment<'a>(flag: &str, item: &'a str) -> Result<(&'a str, &'a str)> {
    item.split_once(":=")
        .filter(|(key, _)| !key.is_empty())
        .ok_or_else(|| {
            Error::Config(ConfigError::RosArgs(format!(
                "{flag} expects name:=value, got {item:?}"
            )))
        })
}

fn absolute_namespace(namespace: &str) -> String {
    let trimmed = namespace.trim_matches('/');
    format!("/{trimmed}")
}

impl RosArgs {
    /// Parses the process arguments (without the program name). Arguments outside
    /// `--ros-args ... [--]` are refused: the node takes none of its own.
    pub fn parse(default_node_name: &str, args: &[String]) -> Result<Self> {
        let mut parsed = Self {
            node_name: default_node_name.to_string(),
            namespace: "/".into(),
            params_files: Vec::new(),
            overrides: Vec::new(),
            remaps: Vec::new(),
        };
        let mut in_ros_args = false;
        let mut items = args.iter();
        while let Some(item) = items.next() {
            let mut value_of = |flag: &str| {
                items.next().ok_or_else(|| {
                    Error::Config(ConfigError::RosArgs(format!("{flag} needs a value")))
                })
            };
            match item.as_str() {
                "--ros-args" => in_ros_args = true,
                "--" if in_ros_args => in_ros_args = false,
                _ if !in_ros_args => {
                    return Err(Error::Config(ConfigError::RosArgs(format!(
                        "unexpected argument {item:?}: orbsift_node takes only --ros-args \
                         (--params-file FILE, -p name:=value, -r from:=to)"
                    ))))
                }
                "--params-file" => parsed.params_files.push(value_of(item)?.into()),
                "-p" | "--param" => {
                    let (name, value) = assignment(item, value_of(item)?)?;
                    parsed.overrides.push(format!("{name}={value}"));
                }
                "-r" | "--remap" => {
                    let (from, to) = assignment(item, value_of(item)?)?;
                    match from {
                        "__node" | "__name" => parsed.node_name = to.to_string(),
                        "__ns" => parsed.namespace = absolute_namespace(to),
                        _ => parsed.remaps.push((from.to_string(), to.to_string())),
                    }
                }
                other => {
                    return Err(Error::Config(ConfigError::RosArgs(format!(
                        "unsupported ROS argument {other:?} (supported: --params-file, -p, -r)"
                    ))))
                }
            }
        }
        if parsed.node_name.is_empty() || parsed.node_name.contains('/') {
            return Err(Error::Config(ConfigError::RosArgs(format!(
                "invalid node name {:?}",
                parsed.node_name
            ))));
        }
        Ok(parsed)
    }

    /// `/namespace/node`.
    pub fn fully_qualified_name(&self) -> String {
        self.expand("~")
    }

    /// Makes `name` absolute: `~` is the node, a relative name lives in the namespace.
    fn expand(&self, name: &str) -> String {
        let ns = self.namespace.trim_end_matches('/');
        if name.starts_with('/') {
            name.to_string()
        } else if let Some(private) = name.strip_prefix('~') {
            format!("{ns}/{}{private}", self.node_name)
        } else {
            format!("{ns}/{name}")
        }
    }

    /// The absolute topic for `name` after the first matching remapping rule.
    pub fn resolve(&self, name: &str) -> String {
        let expanded = self.expand(name);
        self.remaps
            .iter()
            .find(|(from, _)| self.expand(from) == expanded)
            .map(|(_, to)| self.expand(to))
            .unwrap_or(expanded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<RosArgs> {
        let args: Vec<String> = args.split_whitespace().map(String::from).collect();
        RosArgs::parse("orbsift", &args)
    }

    #[test]
    fn launch_style_arguments_are_understood() {
        let args = parse(
            "--ros-args -r __node:=front_features -r __ns:=/robot/ \
             --params-file /tmp/p.yaml -p orb.n_features:=500 -r image:=/camera/image_raw \
             -r features:=feats --param algorithm:=orb",
        )
        .unwrap();
        assert_eq!(args.node_name, "front_features");
        assert_eq!(args.namespace, "/robot");
        assert_eq!(args.fully_qualified_name(), "/robot/front_features");
        assert_eq!(args.params_files, [PathBuf::from("/tmp/p.yaml")]);
        assert_eq!(args.overrides, ["orb.n_features=500", "algorithm=orb"]);
        assert_eq!(args.resolve("image"), "/camera/image_raw");
        assert_eq!(args.resolve("features"), "/robot/feats");
        assert_eq!(args.resolve("matches"), "/robot/matches");
        assert_eq!(args.resolve("~/debug"), "/robot/front_features/debug");
        assert_eq!(args.resolve("/diagnostics"), "/diagnostics");
    }

    #[test]
    fn defaults_live_in_the_root_namespace() {
        let args = parse("").unwrap();
        assert_eq!(args.resolve("left/image"), "/left/image");
        assert_eq!(args.fully_qualified_name(), "/orbsift");
    }

    #[test]
    fn absolute_remap_sources_match_resolved_names() {
        let args = parse("--ros-args -r __ns:=cam -r /cam/image:=/other").unwrap();
        assert_eq!(args.resolve("image"), "/other");
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        for (args, expected) in [
            ("--verbose", "unexpected argument"),
            ("--ros-args -p orb.n_features=5", "name:=value"),
            ("--ros-args --params-file", "needs a value"),
            ("--ros-args --log-level debug", "unsupported ROS argument"),
            ("--ros-args -r __node:=a/b", "invalid node name"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.contains(expected), "{args}: {err}");
        }
    }
}
