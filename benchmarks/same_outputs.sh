#!/usr/bin/env bash
# same_outputs.sh CHECKOUT OUT_DIR: what a behaviour-neutral change must leave byte for byte
# identical, produced by the checkout CHECKOUT into OUT_DIR; compare two with `diff -r A B`.
#
# The default experiment under three scripted agents (-n 2, --limbo-records), each run's
# summary files, `limbo summary` (text and --markdown), `limbo merge` of the three record files
# and the `limbo report` directory over them. Run-specific and therefore removed: the run id in
# each record (and the run log, which holds only run ids and selections); -n 2 writes records
# in the order episodes finish, so each record file is sorted before anything reads it again.
set -euo pipefail
code=$(cd "$1" && pwd); out=$2
rm -rf "$out"; mkdir -p "$out"; out=$(cd "$out" && pwd)
export PYTHONPATH=$code
# one hash seed for both sides: before the fix that sums rho's cells in one order, a table's
# n_eff could differ in its last digit between two runs of the same checkout
export PYTHONHASHSEED=0
cd "$code"
for agent in blind_retry verify_first same_key; do
  python -m pytest specs -q -n 2 --agent "scripted:$agent" \
    --limbo-records="$out/$agent/episodes.jsonl" >"$out/$agent.pytest.txt" 2>&1 || true
  tail -1 "$out/$agent.pytest.txt" | sed -E 's/ in [0-9.]+s.*//' > "$out/$agent.tail"
  rm "$out/$agent.pytest.txt" "$out/$agent/episodes.runs.log"
  records="$out/$agent/episodes.jsonl"
  sed -i -E 's/"run_id":"[^"]*"/"run_id":""/' "$records"
  sort -o "$records" "$records"
done
cd "$out"
python -m limbo_plugin.cli summary blind_retry/episodes.jsonl > summary.txt 2>&1 || true
python -m limbo_plugin.cli summary --markdown same_key/episodes.jsonl > summary.md 2>&1 || true
python -m limbo_plugin.cli merge merged.jsonl ./*/episodes.jsonl > merge.txt 2>&1
python -m limbo_plugin.cli report ./*/episodes.jsonl --out report > report.txt 2>&1
