#!/usr/bin/env bash
# docs/scale.md's multi-node recipe, run on one machine as far as it allows (everything on 127.0.0.1):
#   1. model replicas: `taskbench serve --model mock/echo` x 2 stand in for the vLLM servers (no GPU, no vLLM here)
#   2. a shared response cache: redis-server, TASKBENCH_CACHE_URL=redis://127.0.0.1:PORT/0
#   3. the Ray cluster: `ray start --head` + `ray start --address` (a second node: its own temp dir and resources)
#   4. the run: `taskbench run ... --base-url @replicas.txt --executor ray --ray-address HEAD` (predictions,
#      generation and agents stages, all sharded), then the same command again (resumes: nothing left to do)
# Not run here: separate machines, a shared network file system, GPUs and vLLM, Slurm.
# Every process it starts is stopped by pid at the end. Usage: benchmarks/recipe_multinode.sh [WORKDIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$ROOT/../main/.venv/bin/python}
[ -x "$PY" ] || PY=$(command -v python3)
RAY=$(dirname "$PY")/ray
WORK=${1:-$(mktemp -d /tmp/tbrecipe.XXXX)}
mkdir -p "$WORK"
export PYTHONPATH=$ROOT/src${PYTHONPATH:+:$PYTHONPATH} RAY_USAGE_STATS_ENABLED=0 TASKBENCH_CACHE=$WORK/cache
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  # the Ray processes of our two nodes (their command lines or environments name $WORK), sparing this script and
  # its ancestors (a caller's command line may name $WORK too, as in `timeout 600 recipe_multinode.sh $WORK`);
  # never `ray stop`, which would stop every Ray cluster of the machine
  local keep=" " a=$$ st
  while [ "${a:-0}" -gt 1 ]; do
    keep+="$a "
    st=$(cat "/proc/$a/stat" 2>/dev/null) || break
    st=${st##*) }; read -r _ a _ <<< "$st"      # the field after the state is the parent's pid
  done
  for d in /proc/[0-9]*; do
    case "$keep" in *" ${d#/proc/} "*) continue ;; esac
    if grep -qs "$WORK" "$d/cmdline" "$d/environ" 2>/dev/null; then kill -9 "${d#/proc/}" 2>/dev/null || true; fi
  done
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "# 1. two replicas (mock/echo behind taskbench serve)"
: > "$WORK/replicas.txt"
for i in 1 2; do
  port=$(free_port)
  "$PY" -m taskbench serve --model mock/echo --host 127.0.0.1 --port "$port" > "$WORK/serve$i.log" 2>&1 &
  PIDS+=($!)
  echo "http://127.0.0.1:$port/v1" >> "$WORK/replicas.txt"
done
for url in $(cat "$WORK/replicas.txt"); do
  for _ in $(seq 100); do curl -sf "$url/models" > /dev/null && break; sleep 0.2; done
done
cat "$WORK/replicas.txt"

echo "# 2. the shared cache (redis)"
RPORT=$(free_port)
redis-server --bind 127.0.0.1 --port "$RPORT" --save '' --appendonly no --dir "$WORK" > "$WORK/redis.log" 2>&1 &
PIDS+=($!)
export TASKBENCH_CACHE_URL=redis://127.0.0.1:$RPORT/0
for _ in $(seq 50); do redis-cli -p "$RPORT" ping > /dev/null 2>&1 && break; sleep 0.2; done
echo "$TASKBENCH_CACHE_URL"

echo "# 3. the Ray cluster: a head and a second node"
# Ray 2.x token authentication: every node and the driver need the cluster's token (here a file of our own)
"$PY" -c 'from ray._private.authentication.authentication_token_generator import generate_new_authentication_token as g; print(g(), end="")' > "$WORK/auth_token"
export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=$WORK/auth_token
HPORT=$(free_port)
ports() { echo --dashboard-agent-listen-port "$(free_port)" --metrics-export-port "$(free_port)" --runtime-env-agent-port "$(free_port)"; }
# shellcheck disable=SC2046
"$RAY" start $(ports) --head --node-ip-address 127.0.0.1 --port "$HPORT" --num-cpus 1 --include-dashboard false \
  --temp-dir "$WORK/ray-head" --resources '{"head": 1}' --disable-usage-stats > "$WORK/ray-head.log" 2>&1
# shellcheck disable=SC2046
"$RAY" start $(ports) --address "127.0.0.1:$HPORT" --node-ip-address 127.0.0.1 --num-cpus 1 --temp-dir "$WORK/ray-node2" \
  --resources '{"node2": 1}' --disable-usage-stats > "$WORK/ray-node2.log" 2>&1
"$PY" - "$HPORT" <<'EOF'
import sys, ray
ray.init(address=f"127.0.0.1:{sys.argv[1]}", _node_ip_address="127.0.0.1", log_to_driver=False)
print("alive nodes:", sum(1 for n in ray.nodes() if n["Alive"]), "CPUs:", ray.cluster_resources().get("CPU"))
ray.shutdown()
EOF

echo "# 4. the run (every stage sharded), then the same command again"
cd "$WORK"
CMD=("$PY" -m taskbench run -m openai-compatible/echo --base-url "@$WORK/replicas.txt" -d multimedia --limit 8
     --generate 4 --agents react --agent-tasks tmdb-own-01,tmdb-own-02 --executor ray
     --ray-address "127.0.0.1:$HPORT" --workers 2 -c 4 --bootstrap 100 -o "$WORK/runs/echo" -q)
t0=$(date +%s.%N)
"${CMD[@]}" > "$WORK/run1.out" 2> "$WORK/run1.err" || { echo "run exit $?"; tail -20 "$WORK/run1.err"; exit 1; }
t1=$(date +%s.%N)
"${CMD[@]}" > "$WORK/run2.out" 2> "$WORK/run2.err" || { echo "rerun exit $?"; tail -20 "$WORK/run2.err"; exit 1; }
t2=$(date +%s.%N)
tail -12 "$WORK/run1.out"
"$PY" - "$WORK/runs/echo" <<'EOF'
import json, sys
log = json.load(open(sys.argv[1] + "/run_log.json"))
print("status:", log["status"], "| executor:", log["config"]["executor"], "| stages:",
      [(s["kind"], s["status"]) for s in log.get("stages", [])], "| passes:", len(log.get("passes", [])))
EOF
echo "cache keys in redis: $(redis-cli -p "$RPORT" --scan --pattern 'taskbench:llm:*' | wc -l)"
printf 'first run %.1f s, rerun %.1f s\n' "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
