"""OpenCV ORB as a test peer: keypoints and descriptors of grey images, as JSON on stdout.

usage: orb_features.py N_FEATURES IMAGE[:MASK]...

Each IMAGE is read unchanged (the tests hand over orbsift's own grey pixels as PGM);
an optional MASK (same size, non-zero = allowed) is passed to detectAndCompute as
OpenCV's invariance tests do. Keypoint fields are those of `orbsift extract`.
"""
import json
import sys

import cv2


def read_grey(path):
    image = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if image is None or image.ndim != 2:
        sys.exit(f"orb_features.py: {path} is not a readable grey image")
    return image


def features(orb, spec):
    path, _, mask_path = spec.partition(":")
    image = read_grey(path)
    mask = read_grey(mask_path) if mask_path else None
    keypoints, descriptors = orb.detectAndCompute(image, mask)
    return {
        "image": path,
        "width": image.shape[1],
        "height": image.shape[0],
        "keypoints": [
            {
                "x": k.pt[0],
                "y": k.pt[1],
                "size": k.size,
                "angle": k.angle,
                "response": k.response,
                "octave": k.octave,
            }
            for k in keypoints
        ],
        "descriptors": [] if descriptors is None else [d.tobytes().hex() for d in descriptors],
    }


def main():
    n_features = int(sys.argv[1])
    orb = cv2.ORB_create(nfeatures=n_features)
    json.dump([features(orb, spec) for spec in sys.argv[2:]], sys.stdout)


if __name__ == "__main__":
    main()
