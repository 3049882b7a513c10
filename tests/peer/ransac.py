"""cv2.findHomography with RANSAC on sets of point pairs: the inlier mask of each set.

usage: ransac.py THRESHOLD_PX PAIRS.json

PAIRS.json is {"name": [[xa, ya, xb, yb], ...], ...}; the output is
{"name": [true|false per pair], ...} as JSON on stdout. OpenCV's RNG is seeded so
repeated runs give the same masks.
"""
import json
import sys

import cv2
import numpy as np


def inliers(pairs, threshold):
    points = np.asarray(pairs, dtype=np.float32).reshape(-1, 4)
    if len(points) < 4:
        return [False] * len(points)
    _, mask = cv2.findHomography(points[:, :2], points[:, 2:], cv2.RANSAC, threshold)
    return [False] * len(points) if mask is None else [bool(m) for m in mask.ravel()]


def main():
    threshold = float(sys.argv[1])
    with open(sys.argv[2]) as f:
        sets = json.load(f)
    cv2.setRNGSeed(0)
    json.dump({name: inliers(pairs, threshold) for name, pairs in sets.items()}, sys.stdout)


if __name__ == "__main__":
    main()
