//! Runs the real `orbsift` binary on the images in tests/data and checks the contract
//! outside scripts rely on: the JSON shapes, the BENCH lines, the config round trip,
//! and one-line errors for bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Runs orbsift with the default log level, as a user would.
fn orbsift<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_orbsift"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the orbsift binary runs")
}

fn succeed(args: &[&str]) -> Output {
    let out = orbsift(args);
    assert!(
        out.status.success(),
        "orbsift {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Extracts `image` with the CPU backend and `extra` arguments; returns the JSON.
fn extract(dir: &TempDir, image: &Path, extra: &[&str]) -> Value {
    let out = dir.path().join("features.json");
    let mut args = vec!["extract", "--backend", "cpu", "--out", path_str(&out)];
    args.extend_from_slice(extra);
    args.push(path_str(image));
    succeed(&args);
    read_json(&out)
}

/// Checks one extract object against its image and returns the keypoint count.
fn check_features(json: &Value, image: &Path, width: u64, height: u64, n_features: usize) -> usize {
    assert_eq!(json["image"], path_str(image));
    assert_eq!(json["width"], width);
    assert_eq!(json["height"], height);
    assert_eq!(json["algorithm"], "orb");
    assert_eq!(json["backend"], "cpu");
    assert_eq!(json["descriptor_type"], "orb256");
    let keypoints = json["keypoints"].as_array().unwrap();
    let descriptors = json["descriptors"].as_array().unwrap();
    assert!(
        !keypoints.is_empty() && keypoints.len() <= n_features,
        "{} keypoints",
        keypoints.len()
    );
    assert_eq!(descriptors.len(), keypoints.len());
    for k in keypoints {
        let field = |name: &str| k[name].as_f64().unwrap_or_else(|| panic!("{name} in {k}"));
        assert!((0.0..width as f64).contains(&field("x")), "{k}");
        assert!((0.0..height as f64).contains(&field("y")), "{k}");
        assert!(field("size") > 0.0, "{k}");
        assert!((0.0..360.0).contains(&field("angle")), "{k}");
        assert!(field("response").is_finite(), "{k}");
        assert!(k["octave"].as_i64().is_some_and(|o| o >= 0), "{k}");
    }
    for d in descriptors {
        let d = d.as_str().unwrap();
        assert_eq!(d.len(), 64, "{d}");
        assert!(
            d.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)),
            "{d}"
        );
    }
    keypoints.len()
}

#[test]
fn extract_writes_every_field_with_sane_values() {
    let dir = TempDir::new().unwrap();
    let image = data("graf1.png");
    let json = extract(&dir, &image, &[]);
    check_features(&json, &image, 800, 640, 2000);
    // PGM, JPEG and (colour) PPM inputs are read too.
    let ppm = dir.path().join("rubberwhale1.ppm");
    image::open(data("rubberwhale1.png"))
        .unwrap()
        .into_rgb8()
        .save(&ppm)
        .unwrap();
    for (path, w, h) in [
        (data("box.pgm"), 324, 223),
        (data("leuvenA.jpg"), 751, 563),
        (ppm, 584, 388),
    ] {
        let json = extract(&dir, &path, &[]);
        check_features(&json, &path, w, h, 2000);
    }
}

#[test]
fn set_n_features_is_honoured_and_flags_override_the_config() {
    let dir = TempDir::new().unwrap();
    let image = data("graf1.png");
    let full = check_features(&extract(&dir, &image, &[]), &image, 800, 640, 2000);
    assert!(full > 100, "the default budget finds {full} keypoints");
    let limited = extract(&dir, &image, &["--set", "orb.n_features=100"]);
    check_features(&limited, &image, 800, 640, 100);
    // --backend beats both the file and --set.
    let file = dir.path().join("cuda.yaml");
    std::fs::write(&file, "/**:\n  ros__parameters:\n    backend: cuda\n").unwrap();
    let json = extract(
        &dir,
        &image,
        &[
            "--config",
            path_str(&file),
            "--set",
            "backend=cuda",
            "--set",
            "orb.n_features=100",
        ],
    );
    check_features(&json, &image, 800, 640, 100);
}

#[test]
fn match_writes_both_feature_sets_matches_in_range_and_a_side_by_side_picture() {
    let dir = TempDir::new().unwrap();
    let (a, b) = (data("graf1.png"), data("rubberwhale1.png"));
    let out = dir.path().join("matches.json");
    let picture = dir.path().join("matches.png");
    succeed(&[
        "match",
        "--backend",
        "cpu",
        path_str(&a),
        path_str(&b),
        "--out",
        path_str(&out),
        "--draw",
        path_str(&picture),
    ]);
    let json = read_json(&out);
    let na = check_features(&json["a"], &a, 800, 640, 2000);
    let nb = check_features(&json["b"], &b, 584, 388, 2000);
    let matches = json["matches"].as_array().unwrap();
    let mut trains = std::collections::HashSet::new();
    for m in matches {
        let (q, t) = (m["query"].as_u64().unwrap(), m["train"].as_u64().unwrap());
        assert!((q as usize) < na && (t as usize) < nb, "{m}");
        assert!(
            (0.0..=256.0).contains(&m["distance"].as_f64().unwrap()),
            "{m}"
        );
        assert!(
            trains.insert(t),
            "cross-checked matches use train {t} twice"
        );
    }
    assert_eq!(image::image_dimensions(&picture).unwrap(), (800 + 584, 640));
}

/// graf1 -> graf3 ground truth: OpenCV XML holding a row-major 3x3 matrix.
fn graf_homography() -> [f64; 9] {
    let text = std::fs::read_to_string(data("H1to3p.xml")).unwrap();
    let start = text.find("<data>").unwrap() + "<data>".len();
    let end = text.find("</data>").unwrap();
    let values: Vec<f64> = text[start..end]
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    values.try_into().unwrap()
}

#[test]
fn graf1_to_graf3_matches_agree_with_the_ground_truth_homography() {
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("graf.json");
    succeed(&[
        "match",
        "--backend",
        "cpu",
        path_str(&data("graf1.png")),
        path_str(&data("graf3.png")),
        "--out",
        path_str(&out),
    ]);
    let json = read_json(&out);
    let h = graf_homography();
    let point = |set: &str, i: &Value| {
        let k = &json[set]["keypoints"][i.as_u64().unwrap() as usize];
        (k["x"].as_f64().unwrap(), k["y"].as_f64().unwrap())
    };
    let matches = json["matches"].as_array().unwrap();
    let correct = matches
        .iter()
        .filter(|m| {
            let (x, y) = point("a", &m["query"]);
            let w = h[6] * x + h[7] * y + h[8];
            let projected = (
                (h[0] * x + h[1] * y + h[2]) / w,
                (h[3] * x + h[4] * y + h[5]) / w,
            );
            let found = point("b", &m["train"]);
            (projected.0 - found.0).hypot(projected.1 - found.1) <= 3.0
        })
        .count();
    eprintln!("{correct} of {} matches within 3 px", matches.len());
    assert!(correct >= 100, "only {correct} correct matches");
    assert!(
        2 * correct > matches.len(),
        "{correct} of {} correct",
        matches.len()
    );
}

#[test]
fn config_output_round_trips_and_flags_win() {
    let dir = TempDir::new().unwrap();
    let printed = succeed(&[
        "config",
        "--set",
        "orb.n_features=123",
        "--set",
        "matching.cross_check=false",
        "--set",
        "algorithm=sift",
        "--algo",
        "orb",
        "--backend",
        "cpu",
    ]);
    let text = String::from_utf8(printed.stdout).unwrap();
    assert!(text.starts_with("/**:\n  ros__parameters:\n"), "{text}");
    let file = dir.path().join("printed.yaml");
    std::fs::write(&file, &text).unwrap();
    let config = orbsift::config::NodeConfig::load(Some(&file), &[])
        .unwrap()
        .library;
    assert_eq!(config.orb.n_features, 123);
    assert!(!config.matching.cross_check);
    assert_eq!(config.algorithm, orbsift::Algorithm::Orb);
    assert_eq!(config.backend, orbsift::Backend::Cpu);
    assert_eq!(config.orb.n_levels, orbsift::OrbConfig::default().n_levels);
    let again = succeed(&["config", "--config", path_str(&file)]);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), text);
}

/// Also the frames it timed, as binary PGM a peer reads (`--save-frames`).
#[test]
fn bench_prints_one_machine_readable_line_per_size() {
    let dir = TempDir::new().unwrap();
    let frames = dir.path().join("frames");
    let out = succeed(&[
        "bench",
        "--backend",
        "cpu",
        "--iterations",
        "2",
        "--threads",
        "2",
        "--image",
        path_str(&data("graf1.png")),
        "--save-frames",
        path_str(&frames),
    ]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("BENCH ")).collect();
    let sizes: Vec<String> = lines.iter().map(|l| check_bench_line(l)).collect();
    assert_eq!(
        sizes,
        ["640x480", "1280x960", "1920x1080", "3840x2160"],
        "{stdout}"
    );
    let source = orbsift::GrayImage::open(&data("graf1.png")).unwrap();
    for size in &sizes {
        let (width, height) = size.split_once('x').unwrap();
        let (width, height): (usize, usize) = (width.parse().unwrap(), height.parse().unwrap());
        let path = frames.join(format!("{size}-0.pgm"));
        let bytes = std::fs::read(&path).unwrap();
        let header = format!("P5\n{width} {height}\n255\n");
        assert!(bytes.starts_with(header.as_bytes()), "{}", path.display());
        let frame = orbsift::GrayImage::open(&path).unwrap();
        assert!(frame == source.resized(width, height).unwrap(), "{size}");
    }
}

/// `--size` times the sizes it names, in its order, and nothing else.
#[test]
fn bench_times_the_sizes_asked_for() {
    let out = succeed(&[
        "bench",
        "--backend",
        "cpu",
        "--iterations",
        "1",
        "--threads",
        "2",
        "--image",
        path_str(&data("graf1.png")),
        "--size",
        "320x240,200x300",
    ]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let sizes: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("BENCH "))
        .map(check_bench_line)
        .collect();
    assert_eq!(sizes, ["320x240", "200x300"], "{stdout}");
}

/// Checks `BENCH algo=orb backend=cpu device="..." size=WxH features=N extract_ms_median=..
/// extract_ms_min=.. upload_ms_median=.. match_ms_median=..`; returns the size.
fn check_bench_line(line: &str) -> String {
    let rest = line
        .strip_prefix("BENCH algo=orb backend=cpu device=\"")
        .unwrap();
    let (device, rest) = rest.split_once("\" ").unwrap();
    assert!(!device.is_empty());
    let fields: Vec<(&str, &str)> = rest
        .split(' ')
        .map(|f| f.split_once('=').unwrap())
        .collect();
    let names: Vec<&str> = fields.iter().map(|f| f.0).collect();
    assert_eq!(
        names,
        [
            "size",
            "features",
            "extract_ms_median",
            "extract_ms_min",
            "upload_ms_median",
            "match_ms_median"
        ],
        "{line}"
    );
    assert!(fields[1].1.parse::<u32>().unwrap() > 0, "{line}");
    let ms: Vec<f64> = fields[2..].iter().map(|f| f.1.parse().unwrap()).collect();
    assert!(ms[0] > 0.0 && ms[1] > 0.0 && ms[1] <= ms[0], "{line}");
    assert_eq!(ms[2], 0.0, "the CPU uploads nothing: {line}");
    assert!(ms[3] > 0.0, "{line}");
    fields[0].1.to_string()
}

/// The run failed with exactly one stderr line, `orbsift: error: ...` naming `needle`.
fn assert_one_line_error(args: &[&str], needle: &str) {
    let out = orbsift(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
    assert!(
        lines[0].starts_with("orbsift: error: "),
        "{args:?}: {stderr}"
    );
    assert!(
        lines[0].contains(needle),
        "{args:?} should name {needle}: {stderr}"
    );
}

#[test]
fn every_bad_input_fails_with_one_line_naming_the_problem() {
    let dir = TempDir::new().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_str().unwrap().to_string()
    };
    let graf = path_str(&data("graf1.png")).to_string();
    let png = std::fs::read(&graf).unwrap();
    let truncated = write("truncated.png", &png[..png.len() / 3]);
    let jpeg = std::fs::read(data("leuvenA.jpg")).unwrap();
    let truncated_jpeg = write("truncated.jpg", &jpeg[..jpeg.len() * 2 / 3]);
    let text = write("notes.png", b"this is not an image\n");
    let missing = dir.path().join("missing.png").to_str().unwrap().to_string();
    let bad_yaml = write(
        "bad.yaml",
        b"/**:\n  ros__parameters:\n    orb: [unclosed\n",
    );
    let unknown_in_file = write(
        "unknown.yaml",
        b"/**:\n  ros__parameters:\n    orb:\n      n_featurez: 5\n",
    );
    let missing_yaml = dir.path().join("nope.yaml").to_str().unwrap().to_string();
    let out = dir.path().join("out.json").to_str().unwrap().to_string();

    let extract = |extra: &[&str], image: &str| {
        let mut args = vec!["extract".to_string(), "--out".into(), out.clone()];
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(image.to_string());
        args
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (extract(&[], &missing), missing.as_str()),
        (extract(&[], &text), text.as_str()),
        (extract(&[], &truncated), truncated.as_str()),
        (extract(&[], &truncated_jpeg), "truncated"),
        (extract(&["--config", &bad_yaml], &graf), bad_yaml.as_str()),
        (
            extract(&["--config", &missing_yaml], &graf),
            missing_yaml.as_str(),
        ),
        (
            extract(&["--config", &unknown_in_file], &graf),
            "orb.n_featurez",
        ),
        (
            extract(&["--set", "orb.n_features=0"], &graf),
            "orb.n_features",
        ),
        (
            extract(&["--set", "orb.scale_factor=.nan"], &graf),
            "orb.scale_factor",
        ),
        (
            extract(&["--set", "matching.ratio=2"], &graf),
            "matching.ratio",
        ),
        (extract(&["--set", "orb.bogus=1"], &graf), "orb.bogus"),
        (extract(&["--set", "novalue"], &graf), "novalue"),
        (extract(&["--algo", "surf"], &graf), "surf"),
        (
            extract(&["--set", "max_image_pixels=100000"], &graf),
            "max_image_pixels",
        ),
        (
            vec![
                "match".into(),
                graf.clone(),
                missing.clone(),
                "--out".into(),
                out.clone(),
            ],
            missing.as_str(),
        ),
        (
            vec![
                "bench".into(),
                "--image".into(),
                text.clone(),
                "--iterations".into(),
                "1".into(),
            ],
            text.as_str(),
        ),
        (
            vec!["bench".into(), "--iterations".into(), "0".into()],
            "--iterations",
        ),
        (
            vec!["bench".into(), "--size".into(), "0x480".into()],
            "--size",
        ),
        (
            vec!["bench".into(), "--size".into(), "640by480".into()],
            "--size",
        ),
        (
            vec![
                "bench".into(),
                "--backend".into(),
                "cpu".into(),
                "--size".into(),
                "100000x100000".into(),
            ],
            "--size",
        ),
        (
            vec![
                "bench".into(),
                "--backend".into(),
                "cpu".into(),
                "--no-graph".into(),
            ],
            "--no-graph",
        ),
        (
            vec![
                "bench".into(),
                "--backend".into(),
                "cpu".into(),
                "--sm-limit".into(),
                "8".into(),
            ],
            "--sm-limit",
        ),
        (
            vec!["config".into(), "--config".into(), bad_yaml.clone()],
            bad_yaml.as_str(),
        ),
    ];
    for (args, needle) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_one_line_error(&args, needle);
    }
    assert!(!Path::new(&out).exists(), "a failed run left {out} behind");
}

#[test]
fn an_unwritable_output_is_reported_not_panicked() {
    let dir = TempDir::new().unwrap();
    let out = dir.path().join("no/such/dir/out.json");
    let run = orbsift([
        "extract",
        "--backend",
        "cpu",
        "--out",
        path_str(&out),
        path_str(&data("box.pgm")),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Extraction succeeded and logged first; the error is the one last line.
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("orbsift: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains(path_str(&out)), "{stderr}");
    assert_eq!(stderr.lines().last(), Some(errors[0]));
}
