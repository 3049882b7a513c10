"""Match quality and coverage of a selection policy on four real pairs (perf/HISTORY.md,
"Grid distribution").

usage (repository root, after `cargo build --release --bin orbsift`):
  .venv/bin/python perf/grid_eval.py LABEL [key=value ...]   # ours, with --set key=value
  .venv/bin/python perf/grid_eval.py opencv [N]              # OpenCV ORB_create(N), default 2000

Per pair: keypoints of A, matches (ratio 0.8 + cross-check), then
- graf1->graf3: RANSAC homography (3 px) inliers within 3 px of H1to3p / matches within
  3 px of H1to3p before RANSAC;
- leuvenA->B: RANSAC homography (3 px) inliers; rubberwhale, basketball (no ground
  truth, small motion): RANSAC fundamental matrix (1 px) inliers;
- cov: fraction of the 30 px cells of the detection area (edge 31) of image A holding a
  keypoint (all levels, input pixels); cov0: the same for level-0 keypoints only;
- cv: coefficient of variation of the keypoints per cell (lower = more even).
"""
import json
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

# orbsift's matching policy on OpenCV, as the tests' peer applies it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "peer"))
from orb_matches import mutual_ratio_matches  # noqa: E402

PAIRS = {
    "graf": ("graf1.png", "graf3.png"),
    "leuven": ("leuvenA.jpg", "leuvenB.jpg"),
    "rubber": ("rubberwhale1.png", "rubberwhale2.png"),
    "basket": ("basketball1.png", "basketball2.png"),
}
DATA = "tests/data/"
CELL, EDGE = 30, 31


def graf_truth():
    text = open(DATA + "H1to3p.xml").read()
    return np.array([float(v) for v in text.split("<data>")[1].split("</data>")[0].split()]).reshape(3, 3)


def cell_counts(points, w, h):
    nx, ny = (w - 2 * EDGE) // CELL, (h - 2 * EDGE) // CELL
    counts = np.zeros((ny, nx))
    for x, y in points:
        i, j = int((y - EDGE) // CELL), int((x - EDGE) // CELL)
        if 0 <= i < ny and 0 <= j < nx:
            counts[i, j] += 1
    return counts


def geometric_check(name, pa, pb):
    cv2.setRNGSeed(0)
    if len(pa) < 8:
        return "-"
    if name == "graf":
        projected = cv2.perspectiveTransform(pa.reshape(-1, 1, 2), graf_truth()).reshape(-1, 2)
        close = np.linalg.norm(projected - pb, axis=1) <= 3
        _, mask = cv2.findHomography(pa, pb, cv2.RANSAC, 3.0)
        return "%d/%d" % ((close & (mask.ravel() > 0)).sum(), close.sum())
    if name == "leuven":
        _, mask = cv2.findHomography(pa, pb, cv2.RANSAC, 3.0)
    else:
        _, mask = cv2.findFundamentalMat(pa, pb, cv2.FM_RANSAC, 1.0, 0.999)
    return str(int(mask.sum()))


def opencv(a, b, n):
    orb = cv2.ORB_create(n)
    ia, ib = cv2.imread(DATA + a, 0), cv2.imread(DATA + b, 0)
    (ka, da), (kb, db) = orb.detectAndCompute(ia, None), orb.detectAndCompute(ib, None)
    points = lambda k: np.array([p.pt for p in k], np.float32)
    return points(ka), points(kb), [p.octave for p in ka], mutual_ratio_matches(da, db, 0.8), ia.shape[::-1]


def ours(a, b, sets):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "m.json")
        cmd = ["target/release/orbsift", "match", "--backend", "cpu"]
        for s in sets:
            cmd += ["--set", s]
        subprocess.run(cmd + [DATA + a, DATA + b, "--out", out], check=True, capture_output=True)
        o = json.load(open(out))
    points = lambda side: np.array([[k["x"], k["y"]] for k in side["keypoints"]], np.float32)
    octaves = [k["octave"] for k in o["a"]["keypoints"]]
    pairs = [(m["query"], m["train"]) for m in o["matches"]]
    return points(o["a"]), points(o["b"]), octaves, pairs, (o["a"]["width"], o["a"]["height"])


def main():
    label, args = sys.argv[1], sys.argv[2:]
    row = [" ".join([label] + args)]
    for name, (a, b) in PAIRS.items():
        if label == "opencv":
            ka, kb, octaves, pairs, (w, h) = opencv(a, b, int(args[0]) if args else 2000)
        else:
            ka, kb, octaves, pairs, (w, h) = ours(a, b, args)
        pa = ka[[q for q, _ in pairs]]
        pb = kb[[t for _, t in pairs]]
        counts = cell_counts(ka, w, h)
        level0 = cell_counts([p for p, o in zip(ka, octaves) if o == 0], w, h)
        row.append(
            "%s: kp %d m %d ok %s cov %.2f cov0 %.2f cv %.2f"
            % (name, len(ka), len(pairs), geometric_check(name, pa, pb), (counts > 0).mean(),
               (level0 > 0).mean(), counts.std() / max(counts.mean(), 1e-9))
        )
    print(" | ".join(row))


if __name__ == "__main__":
    main()
