//! Pictures of features for people: keypoint circles, and two images side by side with
//! a line per match. Used by `orbsift match --draw` and the node's debug image.
//!
//! The two primitives (a line and a circle outline) are drawn here rather than with
//! imageproc, which would pull nalgebra, rand and a font rasteriser into the library
//! the node links, for two loops.

use image::{Rgb, RgbImage};

use crate::image::GrayImage;
use crate::types::{Keypoints, Match};

const KEYPOINT_COLOUR: Rgb<u8> = Rgb([0, 255, 0]);

/// `image` in colour with a circle of diameter `size` and a radius showing `angle`
/// at every keypoint.
pub fn draw_keypoints(image: &GrayImage, keypoints: &Keypoints) -> RgbImage {
    let mut canvas = RgbImage::new(image.width() as u32, image.height() as u32);
    paste(&mut canvas, image, 0);
    for i in 0..keypoints.len() {
        keypoint(&mut canvas, keypoints, i, 0.0, KEYPOINT_COLOUR);
    }
    canvas
}

/// `a` and `b` side by side (width `wa + wb`) and, for each match, `a`'s keypoint
/// `query` and `b`'s keypoint `train` circled and joined by a line, each match in its
/// own colour (unmatched keypoints are left out: with thousands the picture would be
/// unreadable). Matches whose indexes are out of range are skipped.
pub fn draw_matches(
    a: &GrayImage,
    keypoints_a: &Keypoints,
    b: &GrayImage,
    keypoints_b: &Keypoints,
    matches: &[Match],
) -> RgbImage {
    let offset = a.width() as f32;
    let width = a.width() + b.width();
    let mut canvas = RgbImage::new(width as u32, a.height().max(b.height()) as u32);
    paste(&mut canvas, a, 0);
    paste(&mut canvas, b, a.width());
    for (n, m) in matches.iter().enumerate() {
        let (i, j) = (m.query as usize, m.train as usize);
        if i >= keypoints_a.len() || j >= keypoints_b.len() {
            continue;
        }
        let colour = distinct_colour(n);
        keypoint(&mut canvas, keypoints_a, i, 0.0, colour);
        keypoint(&mut canvas, keypoints_b, j, offset, colour);
        let from = (keypoints_a.x[i], keypoints_a.y[i]);
        let to = (keypoints_b.x[j] + offset, keypoints_b.y[j]);
        line(&mut canvas, from, to, colour);
    }
    canvas
}

/// Copies `image` in grey onto `canvas` with its left edge at column `x_offset`.
fn paste(canvas: &mut RgbImage, image: &GrayImage, x_offset: usize) {
    for y in 0..image.height() {
        for (x, &v) in image.row(y).iter().enumerate() {
            canvas.put_pixel((x_offset + x) as u32, y as u32, Rgb([v, v, v]));
        }
    }
}

/// Keypoint `i` as a circle of diameter `size` with a radius showing its angle.
fn keypoint(
    canvas: &mut RgbImage,
    keypoints: &Keypoints,
    i: usize,
    x_offset: f32,
    colour: Rgb<u8>,
) {
    let centre = (keypoints.x[i] + x_offset, keypoints.y[i]);
    let radius = (keypoints.size[i] / 2.0).max(1.0);
    circle(canvas, centre, radius, colour);
    let (sin, cos) = keypoints.angle[i].to_radians().sin_cos();
    line(
        canvas,
        centre,
        (centre.0 + radius * cos, centre.1 + radius * sin),
        colour,
    );
}

/// Sets the pixel nearest to `(x, y)` when it lies on the canvas.
fn plot(canvas: &mut RgbImage, (x, y): (f32, f32), colour: Rgb<u8>) {
    let (x, y) = (x.round(), y.round());
    if x >= 0.0 && y >= 0.0 && x < canvas.width() as f32 && y < canvas.height() as f32 {
        canvas.put_pixel(x as u32, y as u32, colour);
    }
}

/// A one-pixel segment, sampled once per pixel along its longer axis. Endpoints are
/// clamped to just outside the canvas so a wild coordinate cannot make it loop long.
fn line(canvas: &mut RgbImage, from: (f32, f32), to: (f32, f32), colour: Rgb<u8>) {
    if ![from.0, from.1, to.0, to.1].iter().all(|v| v.is_finite()) {
        return;
    }
    let clamp = |(x, y): (f32, f32)| {
        (
            x.clamp(-1.0, canvas.width() as f32),
            y.clamp(-1.0, canvas.height() as f32),
        )
    };
    let (from, to) = (clamp(from), clamp(to));
    let steps = (to.0 - from.0)
        .abs()
        .max((to.1 - from.1).abs())
        .ceil()
        .max(1.0) as u32;
    for s in 0..=steps {
        let t = s as f32 / steps as f32;
        let point = (from.0 + t * (to.0 - from.0), from.1 + t * (to.1 - from.1));
        plot(canvas, point, colour);
    }
}

/// A circle outline, sampled about once per pixel of its circumference.
fn circle(canvas: &mut RgbImage, centre: (f32, f32), radius: f32, colour: Rgb<u8>) {
    let limit = canvas.width().max(canvas.height()) as f32;
    if !(centre.0.is_finite() && centre.1.is_finite() && radius.is_finite()) {
        return;
    }
    let radius = radius.min(limit);
    let steps = (std::f32::consts::TAU * radius).ceil().max(8.0) as u32;
    for s in 0..steps {
        let (sin, cos) = (std::f32::consts::TAU * s as f32 / steps as f32).sin_cos();
        plot(
            canvas,
            (centre.0 + radius * cos, centre.1 + radius * sin),
            colour,
        );
    }
}

/// Fully saturated colours whose hues step by the golden angle, so neighbouring
/// matches differ.
fn distinct_colour(n: usize) -> Rgb<u8> {
    let hue = (n as f32 * 137.507_77) % 360.0 / 60.0;
    let x = ((1.0 - (hue % 2.0 - 1.0).abs()) * 255.0) as u8;
    Rgb(match hue as u32 {
        0 => [255, x, 0],
        1 => [x, 255, 0],
        2 => [0, 255, x],
        3 => [0, x, 255],
        4 => [x, 0, 255],
        _ => [255, 0, x],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grey(width: usize, height: usize, value: u8) -> GrayImage {
        GrayImage::new(width, height, vec![value; width * height]).unwrap()
    }

    fn one_keypoint(x: f32, y: f32, size: f32) -> Keypoints {
        let mut k = Keypoints::default();
        k.push(x, y, size, 0.0, 1.0, 0);
        k
    }

    #[test]
    fn keypoint_circle_passes_through_its_radius_and_leaves_the_centre_region() {
        let canvas = draw_keypoints(&grey(40, 30, 10), &one_keypoint(20.0, 15.0, 20.0));
        assert_eq!(canvas.dimensions(), (40, 30));
        // Radius 10: points on the circle are green, a point inside off the angle line is grey.
        assert_eq!(*canvas.get_pixel(20, 5), KEYPOINT_COLOUR);
        assert_eq!(*canvas.get_pixel(10, 15), KEYPOINT_COLOUR);
        assert_eq!(*canvas.get_pixel(20, 10), Rgb([10, 10, 10]));
        // Angle 0 points along +x from the centre.
        assert_eq!(*canvas.get_pixel(25, 15), KEYPOINT_COLOUR);
    }

    #[test]
    fn match_lines_join_the_two_halves() {
        let (a, b) = (grey(30, 20, 50), grey(40, 25, 100));
        let ka = one_keypoint(5.0, 10.0, 2.0);
        let kb = one_keypoint(35.0, 10.0, 2.0);
        let matches = [
            Match {
                query: 0,
                train: 0,
                distance: 3.0,
            },
            Match {
                query: 9,
                train: 0,
                distance: 1.0,
            },
        ];
        let canvas = draw_matches(&a, &ka, &b, &kb, &matches);
        assert_eq!(canvas.dimensions(), (70, 25));
        // The horizontal line from (5,10) to (65,10) crosses the seam at x = 30.
        for x in [10, 29, 30, 60] {
            assert_eq!(*canvas.get_pixel(x, 10), distinct_colour(0), "x = {x}");
        }
        // Both ends are circled (radius 1) in the match's colour.
        assert_eq!(*canvas.get_pixel(5, 9), distinct_colour(0));
        assert_eq!(*canvas.get_pixel(65, 11), distinct_colour(0));
        // Each half keeps its own pixels; below `a` the canvas is black.
        assert_eq!(*canvas.get_pixel(2, 2), Rgb([50, 50, 50]));
        assert_eq!(*canvas.get_pixel(32, 2), Rgb([100, 100, 100]));
        assert_eq!(*canvas.get_pixel(2, 22), Rgb([0, 0, 0]));
    }

    #[test]
    fn wild_coordinates_do_not_panic() {
        let mut k = one_keypoint(f32::NAN, 1e30, f32::INFINITY);
        k.push(-1e9, 5.0, 1e12, 45.0, 0.0, 0);
        let canvas = draw_keypoints(&grey(8, 8, 0), &k);
        assert_eq!(canvas.dimensions(), (8, 8));
    }
}
