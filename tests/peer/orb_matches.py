"""OpenCV's ORB + BFMatcher(NORM_HAMMING) on an image pair, with orbsift's matching
policy (k = 2 ratio test, mutual cross-check): matched point pairs as JSON on stdout.

usage: orb_matches.py N_FEATURES RATIO A B

Output: {"keypoints_a", "keypoints_b", "pairs": [[xa, ya, xb, yb], ...]}.
"""
import json
import sys

import cv2


def mutual_ratio_matches(desc_a, desc_b, ratio):
    """orbsift's matching policy on OpenCV's BFMatcher(NORM_HAMMING): each A descriptor's
    nearest B descriptor, kept when it passes the k = 2 ratio test and its own nearest A
    descriptor is that one. Returns (index in A, index in B) pairs."""
    matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
    # Each B descriptor's nearest A descriptor, for the cross-check.
    backward = {m.queryIdx: m.trainIdx for m in matcher.match(desc_b, desc_a)}
    pairs = []
    for candidates in matcher.knnMatch(desc_a, desc_b, k=2):
        best = candidates[0]
        if len(candidates) == 2 and not best.distance < ratio * candidates[1].distance:
            continue
        if backward[best.trainIdx] == best.queryIdx:
            pairs.append((best.queryIdx, best.trainIdx))
    return pairs


def main():
    n_features, ratio = int(sys.argv[1]), float(sys.argv[2])
    orb = cv2.ORB_create(nfeatures=n_features)
    images = [cv2.imread(path, cv2.IMREAD_UNCHANGED) for path in sys.argv[3:5]]
    (kp_a, desc_a), (kp_b, desc_b) = (orb.detectAndCompute(im, None) for im in images)
    pairs = [[*kp_a[a].pt, *kp_b[b].pt] for a, b in mutual_ratio_matches(desc_a, desc_b, ratio)]
    json.dump({"keypoints_a": len(kp_a), "keypoints_b": len(kp_b), "pairs": pairs}, sys.stdout)


if __name__ == "__main__":
    main()
