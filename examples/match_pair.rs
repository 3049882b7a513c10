//! The library on its own: ORB features of two images and their matches, on the GPU
//! when one is usable and on the CPU otherwise (`Backend::Auto`).
//!
//! `cargo run --release --example match_pair -- tests/data/graf1.png tests/data/graf3.png`

use std::path::Path;
use std::process::ExitCode;

use orbsift::{Algorithm, Backend, Config, GrayImage};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [query, train] = args.as_slice() else {
        eprintln!("usage: match_pair QUERY_IMAGE TRAIN_IMAGE");
        return ExitCode::from(2);
    };
    match run(Path::new(query), Path::new(train)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("match_pair: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(query: &Path, train: &Path) -> orbsift::Result<()> {
    let config = Config {
        algorithm: Algorithm::Orb,
        backend: Backend::Auto,
        ..Config::default()
    };
    let mut extractor = orbsift::create_extractor(&config)?;
    let mut matcher = orbsift::create_matcher(&config)?;

    let query_features = extractor.extract(&GrayImage::open(query)?)?;
    let train_features = extractor.extract(&GrayImage::open(train)?)?;
    let matches = matcher.match_features(&query_features, &train_features)?;

    println!(
        "{} and {} keypoints, {} matches",
        query_features.len(),
        train_features.len(),
        matches.len()
    );
    for m in matches.iter().take(5) {
        let (q, t) = (m.query as usize, m.train as usize);
        println!(
            "  ({:.1}, {:.1}) -> ({:.1}, {:.1}), distance {}",
            query_features.keypoints.x[q],
            query_features.keypoints.y[q],
            train_features.keypoints.x[t],
            train_features.keypoints.y[t],
            m.distance
        );
    }
    Ok(())
}
