#!/usr/bin/env bash
# The main job: build the release CLI and match the Oxford graf pair, writing the
# matches as JSON and a side-by-side picture, then print a one-line summary.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh >/dev/null
export PATH="$HOME/.cargo/bin:$PATH"

cargo build --release --bin orbsift
mkdir -p out
target/release/orbsift match tests/data/graf1.png tests/data/graf3.png \
    --out out/graf.json --draw out/graf.png
python3 - <<'PY'
import json
with open("out/graf.json") as f:
    result = json.load(f)
a, b = result["a"], result["b"]
print(f"orbsift {a['algorithm']} on {a['backend']}: graf1 {len(a['keypoints'])} keypoints, "
      f"graf3 {len(b['keypoints'])} keypoints, {len(result['matches'])} matches "
      f"-> out/graf.json, out/graf.png")
PY
