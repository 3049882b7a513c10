"""The rotated and scaled images of OpenCV's invariance tests
(modules/features2d/test/test_invariance_utils.hpp and test_detectors_invariance.impl.hpp).

usage: warp.py IMAGE OUT_DIR

Rotation by angle a (0..345, step 15): H = RDShift * R(a) * LUShift in float32, with
LUShift moving the centre (cols/2, rows/2 in integers) to the origin, R = [[cos, -sin],
[sin, cos]], RDShift moving it to (diag/2, diag/2); the image and a mask (0 within 16 px
of the border) are warped with H into a round(diag)-square. Scale s in 1.5, 2, 2.5:
resize by 1/s with INTER_LINEAR_EXACT. Writes PGMs and prints
{"mask": path, "rotations": [{"angle", "image", "mask", "h": [9 floats]}],
 "scales": [{"scale", "image"}]}.
"""
import json
import math
import os
import sys

import cv2
import numpy as np

BORDER = 16


def rotation(angle, cols, rows):
    radians = np.float32(angle * math.pi / 180)
    diag = np.float32(math.sqrt(np.float32(cols * cols + rows * rows)))
    to_origin = np.eye(3, dtype=np.float32)
    to_origin[:2, 2] = [-(cols // 2), -(rows // 2)]
    rotate = np.eye(3, dtype=np.float32)
    rotate[0, 0] = rotate[1, 1] = np.cos(radians)
    rotate[0, 1], rotate[1, 0] = -np.sin(radians), np.sin(radians)
    to_centre = np.eye(3, dtype=np.float32)
    to_centre[:2, 2] = diag / 2
    side = int(np.rint(diag))
    return to_centre @ rotate @ to_origin, (side, side)


def main():
    image = cv2.imread(sys.argv[1], cv2.IMREAD_UNCHANGED)
    out = sys.argv[2]
    rows, cols = image.shape
    mask = np.zeros_like(image)
    mask[BORDER : rows - BORDER, BORDER : cols - BORDER] = 255
    mask_path = os.path.join(out, "mask.pgm")
    cv2.imwrite(mask_path, mask)
    result = {"mask": mask_path, "rotations": [], "scales": []}
    for angle in range(0, 360, 15):
        h, size = rotation(angle, cols, rows)
        paths = [os.path.join(out, f"rot{angle:03}{kind}.pgm") for kind in ("", "_mask")]
        cv2.imwrite(paths[0], cv2.warpPerspective(image, h, size))
        cv2.imwrite(paths[1], cv2.warpPerspective(mask, h, size))
        result["rotations"].append(
            {"angle": angle, "image": paths[0], "mask": paths[1], "h": h.ravel().tolist()}
        )
    for scale in (1.5, 2.0, 2.5):
        path = os.path.join(out, f"scale{scale}.pgm")
        small = cv2.resize(image, None, fx=1 / scale, fy=1 / scale, interpolation=cv2.INTER_LINEAR_EXACT)
        cv2.imwrite(path, small)
        result["scales"].append({"scale": scale, "image": path})
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
