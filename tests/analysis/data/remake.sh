#!/usr/bin/env bash
# Remakes tests/analysis/data/tinyanalysis/ from tinyanalysis.toml with the harness, in the
# pinned kernel (about a minute), and keeps only what the analysis tests read: the tables
# (summary.csv, runs.csv, matrix.json, meta.json), pcaps/ and runs/<id>/ (records, analysis
# caches, the programs' logs and events). Left out: .work/ (the batches' files),
# wall-profile.json and the downloaded files (results/.data/). Run it from a clean checkout
# with the programs built (make build), so that meta.json records a commit that is not dirty.
set -euo pipefail

DATA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$DATA/../../.." && pwd)"
NAME=tinyanalysis
PYTHON=/usr/bin/python3

cd "$REPO"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "remake.sh: the checkout has uncommitted changes; meta.json will say dirty" >&2
fi
scratch="$(mktemp -d "${TMPDIR:-/tmp}/$NAME-remake.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

"$PYTHON" -m testbed run "tests/analysis/data/$NAME.toml" --results "$scratch" --workers 1

made="$scratch/$NAME"
kept="$scratch/kept"
mkdir "$kept"
for item in summary.csv runs.csv matrix.json meta.json pcaps runs; do
    cp -a "$made/$item" "$kept/"
done
rm -rf "${DATA:?}/$NAME"
mv "$kept" "$DATA/$NAME"
du -sh "$DATA/$NAME"
