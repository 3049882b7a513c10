//! The pipelined CUDA ORB path (`Extractor::submit_frame`) against one-frame `extract` on
//! streams of real frames (tests/data) that change size, in both memory modes and
//! with fused matching. GPU tests, run by scripts/gpu-check.sh.
#![cfg(feature = "cuda")]

mod common;

use orbsift::config::MemoryMode;
use orbsift::cuda::{CudaOrbExtractor, Knn2};
use orbsift::{Extractor, Features, GrayImage, OrbConfig};

use common::frames::{load, resized, ORB_IMAGES};

/// `count` frames at `size`, cycling through the images.
fn stream_at(size: (u32, u32), count: usize) -> Vec<GrayImage> {
    ORB_IMAGES
        .iter()
        .cycle()
        .take(count)
        .map(|name| resized(&load(name), size))
        .collect()
}

/// Features and fused matches of every frame, one `extract` at a time.
fn one_at_a_time(gpu: &mut CudaOrbExtractor, frames: &[GrayImage]) -> Vec<(Features, Vec<Knn2>)> {
    frames
        .iter()
        .map(|frame| {
            let features = gpu.extract(frame).expect("extract");
            (features, gpu.last_matches().to_vec())
        })
        .collect()
}

/// The same through the pipeline: each submit returns the frame before it.
fn pipelined(mut gpu: CudaOrbExtractor, frames: &[GrayImage]) -> Vec<(Features, Vec<Knn2>)> {
    let mut results = Vec::new();
    for frame in frames {
        if let Some(features) = gpu.submit_frame(&frame.as_raw()).expect("submit") {
            results.push((features, gpu.last_matches().to_vec()));
        }
    }
    assert_eq!(
        results.len() + 1,
        frames.len(),
        "one result per earlier submit"
    );
    let last = gpu.finish_frame().expect("finish").expect("last frame");
    results.push((last, gpu.last_matches().to_vec()));
    assert!(gpu.finish_frame().expect("second finish").is_none());
    results
}

fn assert_pipeline_equals_extract(memory: MemoryMode, frames: &[GrayImage], fused: bool) {
    let open = || CudaOrbExtractor::new(OrbConfig::default(), memory, None).expect("GPU");
    let (mut reference, mut streamed) = (open(), open());
    if fused {
        let train = reference.extract(&frames[0]).expect("train frame");
        reference
            .set_train(Some(&train.descriptors))
            .expect("train");
        streamed.set_train(Some(&train.descriptors)).expect("train");
    }
    let expected = one_at_a_time(&mut reference, frames);
    let got = pipelined(streamed, frames);
    assert_eq!(expected.len(), got.len());
    for (i, ((want, want_matches), (have, have_matches))) in expected.iter().zip(&got).enumerate() {
        let what = format!("{memory:?} frame {i} ({}x{})", want.width, want.height);
        assert!(!want.is_empty(), "{what}: real frames have keypoints");
        assert_eq!(want, have, "{what}: features");
        assert_eq!(
            want_matches.len(),
            if fused { want.len() } else { 0 },
            "{what}"
        );
        assert_eq!(want_matches, have_matches, "{what}: fused matches");
    }
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn pipelined_frames_equal_extract_across_sizes_in_both_memory_modes() {
    let mut frames = stream_at((640, 480), 7);
    frames.extend(stream_at((1920, 1080), 3));
    frames.extend(stream_at((3840, 2160), 3));
    frames.extend(stream_at((640, 480), 2));
    for memory in [MemoryMode::Device, MemoryMode::Unified] {
        assert_pipeline_equals_extract(memory, &frames, false);
    }
}

/// Also the one the sanitizers run: small frames, both slots, one size change.
#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh"]
fn pipelined_fused_matches_equal_extract() {
    let mut frames = stream_at((640, 480), 5);
    frames.extend(stream_at((1280, 960), 3));
    assert_pipeline_equals_extract(MemoryMode::Device, &frames, true);
}
