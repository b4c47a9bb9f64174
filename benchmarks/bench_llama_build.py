"""Tokens/s of two llama.cpp builds on the same model and prompt: the project's portable wheel against another
(e.g. a native ``-march=native`` build), each run in its own child process, alternated so that background load
hits both alike.

    .venv/bin/python benchmarks/bench_llama_build.py --other /tmp/native-site --rounds 3
    (/tmp/native-site: an unpacked wheel, e.g. `pip wheel --no-binary llama-cpp-python llama-cpp-python` then
    `unzip llama_cpp_python-*.whl -d /tmp/native-site`)

Per build it reports the median prompt-evaluation and generation speed (tokens/s) over the rounds, the
compiled-in CPU features, and the load average before and after. Threads default to the CPU count.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time
import llama_cpp
path, threads, n_prompt, n_gen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
llm = llama_cpp.Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, n_batch=512,
                      verbose=False, seed=0)
text = ("Tools: image classifier, object detector, text translator, speech synthesizer, image captioner. "
        "Plan the steps to caption a photo and read the caption aloud in French. ") * 40
tokens = llm.tokenize(text.encode())[:n_prompt]
t0 = time.perf_counter(); llm.eval(tokens); t1 = time.perf_counter()
out = []
for _ in range(n_gen):
    tok = llm.sample(temp=0.0)
    out.append(tok)
    llm.eval([tok])
t2 = time.perf_counter()
info = llama_cpp.llama_print_system_info()
print(json.dumps({"prompt_tps": len(tokens) / (t1 - t0), "gen_tps": n_gen / (t2 - t1),
                  "system_info": info.decode() if isinstance(info, bytes) else str(info),
                  "module": llama_cpp.__file__}))
"""


def run_one(site: str | None, model: str, threads: int, n_prompt: int, n_gen: int) -> dict[str, object]:
    env = dict(os.environ)
    if site:
        env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", CHILD, model, str(threads), str(n_prompt), str(n_gen)],
                          capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}): {proc.stderr[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--other", required=True, help="site directory holding the other build's llama_cpp package")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="alias or GGUF path")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    from taskbench.llm.weights import resolve_model_path

    model = str(resolve_model_path(args.model)) if not args.model.endswith(".gguf") else args.model
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, object]]] = {"portable (installed)": [], f"other ({args.other})": []}
    for _ in range(args.rounds):
        runs["portable (installed)"].append(run_one(None, model, args.threads, args.prompt_tokens, args.gen_tokens))
        runs[f"other ({args.other})"].append(run_one(args.other, model, args.threads, args.prompt_tokens,
                                                     args.gen_tokens))
    load_after = os.getloadavg()
    result = {"model": args.model, "threads": args.threads, "rounds": args.rounds, "load_before": load_before,
              "load_after": load_after, "builds": {}}
    for name, rs in runs.items():
        p = statistics.median(float(r["prompt_tps"]) for r in rs)  # type: ignore[arg-type]
        g = statistics.median(float(r["gen_tps"]) for r in rs)  # type: ignore[arg-type]
        result["builds"][name] = {"prompt_tps": round(p, 1), "gen_tps": round(g, 1),  # type: ignore[index]
                                  "all_prompt": [round(float(r["prompt_tps"]), 1) for r in rs],  # type: ignore[arg-type]
                                  "all_gen": [round(float(r["gen_tps"]), 1) for r in rs],  # type: ignore[arg-type]
                                  "system_info": rs[0]["system_info"], "module": rs[0]["module"]}
        print(f"{name}: prompt {p:.1f} tok/s, generation {g:.1f} tok/s; {str(rs[0]['system_info']).strip()}")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
