#!/usr/bin/env bash
# The shipped SPAN students, from nothing but taskbench and the offline services (issue 41; docs/distill.md):
#
#   1. tasks generated over the offline TMDB and Spotify services (`generate --method executed`, the 1.5B model
#      rewriting the code's stiff requests), RestBench's queries and our own tasks held out;
#   2. gold trajectories of those tasks: ConAgents under both protocols, with perturbed steps for the review
#      agent, and ReAct (`agents span-data --tasks ... --react`); the last tasks of each API are held out of
#      training (per-role scores, `agents distill-eval`);
#   3. one LoRA student per role on the embedded 0.5B model (`agents distill`), written as GGUF LoRA adapters
#      into WORK/adapters/ROLE; the roles in SHIP_ROLES are copied to src/taskbench/bundled/students/ROLE.gguf,
#      where `--students` and `taskbench run` find them. The default ships the grounding and review students
#      alone: with the execution student too, ConAgents solved 2 of the first 20 RestBench-TMDB queries
#      against 3 with the base playing execution (docs/distill.md, December 7).
#
# Every step resumes: rerunning the script after a kill continues where it stopped (generate and span-data
# resume their runs; distill resumes from its checkpoint). Seeds are fixed. Usage:
#   scripts/make-students.sh [WORKDIR]        (default: students/; the Makefile's `make students` calls it)
# Environment: BIN (the venv's bin), WRITER (request writer model), N_TMDB / N_SPOTIFY (plan entries),
# SHIP_ROLES (the students copied into the package; default "grounding review"),
# HOLDOUT_TMDB / HOLDOUT_SPOTIFY (generated tasks per API kept out of training), THREADS (torch threads).
# Measured (docs/distill.md, December 7): 420 + 220 entries keep 304 + 167 tasks in about 55 min.
set -euo pipefail
WORK="${1:-students}"
BIN="${BIN:-.venv/bin}"
WRITER="${WRITER:-llamacpp/qwen2.5-coder-1.5b}"
N_TMDB="${N_TMDB:-420}"
N_SPOTIFY="${N_SPOTIFY:-220}"
HOLDOUT_TMDB="${HOLDOUT_TMDB:-40}"
HOLDOUT_SPOTIFY="${HOLDOUT_SPOTIFY:-20}"
THREADS="${THREADS:-2}"
SHIP_ROLES="${SHIP_ROLES:-grounding review}"
BASE="llamacpp/qwen2.5-coder-0.5b"
SHIP="src/taskbench/bundled/students"
mkdir -p "$WORK" "$SHIP"

for api in tmdb spotify; do
  n=$N_TMDB; HOLDOUT=$HOLDOUT_TMDB
  if [ "$api" = spotify ]; then n=$N_SPOTIFY; HOLDOUT=$HOLDOUT_SPOTIFY; fi
  "$BIN/taskbench" generate --method executed --env "restbench-$api" -n "$n" -m "$WRITER" --seed 0 \
    -O n_threads="$THREADS" -o "$WORK/gen/$api" -q
  kept=$(grep -c . "$WORK/gen/$api/tasks.jsonl" || true)
  train=$(( kept > HOLDOUT ? kept - HOLDOUT : kept ))
  "$BIN/taskbench" agents span-data --env "restbench-$api" --tasks "$WORK/gen/$api/tasks.jsonl" \
    --protocol conagents-auto,conagents-adaptive --react --min-doc-words 0 --min-tools 0 --perturb 0.5 \
    --seed 0 --limit "$train" -o "$WORK/span/$api" -q
  if [ "$kept" -gt "$train" ]; then
    "$BIN/taskbench" agents span-data --env "restbench-$api" --tasks "$WORK/gen/$api/tasks.jsonl" \
      --protocol conagents-auto,conagents-adaptive --react --min-doc-words 0 --min-tools 0 --perturb 0.5 \
      --seed 0 --offset "$train" -o "$WORK/heldout/$api" -q
  fi
done

train_role() {  # role, then extra distill options
  local role="$1"; shift
  local out="$WORK/adapters/$role" resume=()
  if [ -d "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then resume=(--resume); fi
  if [ ! -f "$out/adapter.gguf" ] || [ ! -f "$out/distill.json" ]; then
    "$BIN/taskbench" agents distill --role "$role" --data "$WORK/span/tmdb,$WORK/span/spotify" --base "$BASE" \
      --layers 8 --lr 5e-4 --seed 0 --threads "$THREADS" --checkpoint-every 25 -o "$out" -q "${resume[@]}" "$@"
  fi
  case " $SHIP_ROLES " in
    *" $role "*) cp "$out/adapter.gguf" "$SHIP/$role.gguf"; cp "$out/distill.json" "$SHIP/$role.json" ;;
  esac
}
# The shipped students' settings (their ROLE.json): about 20, 15 and 28 minutes on 2 cores
train_role grounding --limit "${GROUNDING_EXAMPLES:-300}" --max-length 1536
train_role execution --limit "${EXECUTION_EXAMPLES:-300}" --max-length 1536
train_role review --max-same-target 200 --limit "${REVIEW_EXAMPLES:-700}" --max-length 1536
train_role react --limit "${REACT_EXAMPLES:-400}" --max-length 4096
ls -l "$SHIP"
