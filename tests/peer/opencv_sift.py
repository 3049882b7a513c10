#!/usr/bin/env python3
"""OpenCV's SIFT as a peer for tests/sift_vs_opencv.rs.

  detect IMAGE [--contrast C] [--precise-upscale]
                                                -> JSON on stdout: keypoints (x, y, size, angle,
                                                  response) and descriptors (rows of 128 ints)
  correct FEATURES_A FEATURES_B HOMOGRAPHY_XML  -> JSON: the number of correct matches of A -> B

`correct` applies one matching policy to any two feature files (ours or OpenCV's), so both
sides are judged by the same code: brute-force L2, Lowe ratio 0.8, RANSAC homography
(3 px), and an inlier counts as correct when the ground-truth homography maps it within 3 px.
"""
import argparse
import json
import re
import sys

import cv2
import numpy as np


def detect(args):
    image = cv2.imread(args.image, cv2.IMREAD_GRAYSCALE)
    if image is None:
        sys.exit(f"cannot read {args.image}")
    sift = cv2.SIFT_create(contrastThreshold=args.contrast, enable_precise_upscale=args.precise_upscale)
    keypoints, descriptors = sift.detectAndCompute(image, None)
    out = {
        "opencv": cv2.__version__,
        "keypoints": [[k.pt[0], k.pt[1], k.size, k.angle, k.response] for k in keypoints],
        "descriptors": [] if descriptors is None else np.asarray(descriptors).round().astype(int).tolist(),
    }
    json.dump(out, sys.stdout)


def load(path):
    with open(path) as f:
        data = json.load(f)
    points = np.float32([k[:2] for k in data["keypoints"]])
    descriptors = np.float32(data["descriptors"])
    return points, descriptors


def read_homography(path):
    """The 3x3 matrix of an OpenCV XML file (the `<data>` block, row-major)."""
    with open(path) as f:
        match = re.search(r"<data>(.*?)</data>", f.read(), re.S)
    if match is None:
        sys.exit(f"no <data> block in {path}")
    values = [float(v) for v in match.group(1).split()]
    if len(values) != 9:
        sys.exit(f"{path}: expected 9 values, got {len(values)}")
    return np.float64(values).reshape(3, 3)


def correct(args):
    pa, da = load(args.a)
    pb, db = load(args.b)
    truth = read_homography(args.homography)
    matcher = cv2.BFMatcher(cv2.NORM_L2)
    pairs = matcher.knnMatch(da, db, k=2)
    good = [m for m, n in (p for p in pairs if len(p) == 2) if m.distance < 0.8 * n.distance]
    # truth_correct: ratio matches within 3 px of the ground truth, RANSAC aside.
    result = {"ratio_matches": len(good), "truth_correct": 0, "inliers": 0, "correct": 0}
    if len(good) >= 4:
        src = np.float32([pa[m.queryIdx] for m in good]).reshape(-1, 1, 2)
        dst = np.float32([pb[m.trainIdx] for m in good]).reshape(-1, 1, 2)
        cv2.setRNGSeed(0)
        _, mask = cv2.findHomography(src, dst, cv2.RANSAC, 3.0, maxIters=10000, confidence=0.999)
        inliers = mask.ravel().astype(bool)
        projected = cv2.perspectiveTransform(src, truth).reshape(-1, 2)
        error = np.linalg.norm(projected - dst.reshape(-1, 2), axis=1)
        result["truth_correct"] = int((error <= 3.0).sum())
        result["inliers"] = int(inliers.sum())
        result["correct"] = int((inliers & (error <= 3.0)).sum())
    json.dump(result, sys.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("detect")
    d.add_argument("image")
    d.add_argument("--contrast", type=float, default=0.04)
    d.add_argument("--precise-upscale", action="store_true")
    d.set_defaults(run=detect)
    c = sub.add_parser("correct")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("homography")
    c.set_defaults(run=correct)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
