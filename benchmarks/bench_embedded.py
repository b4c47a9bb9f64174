"""Benchmarks of the embedded llama.cpp model (run from the repository root with the venv's python).

Two measurements, on real TaskBench requests (``../shared/reference/taskbench/<domain>/user_requests.json``)
with the project's inference prompt (``taskbench.predict.prompts``: the tool list first, the request last):

``overhead``  The same prompts through ``get_model("llamacpp/...")`` (response cache off) and through
              llama-cpp-python's ``create_chat_completion`` called directly with identical settings (same GGUF,
              n_ctx, threads, seed, greedy decoding, the same JSON-schema grammar). Calls are interleaved so
              background load hits both sides alike. Reports wall time and process CPU time of each side
              (CPU time is the steadier figure on a shared machine), the overhead of the wrapper (target
              <= 5%), whether the texts are identical, and the prompt tokens actually
              evaluated per call (the shared tool-list prefix is evaluated once, by the first call).

``parse``     Parse failures of unconstrained vs schema-constrained output of the same requests, and decode
              speed (tokens/s). "Parses" is judged three ways for unconstrained output: ``strict``
              (``json.loads`` of the whole answer), ``reference`` (the reference scripts' rule: the span from
              the first ``{`` to the last ``}`` after dropping newlines and backslashes) and ``repair``
              (``taskbench.llm.extract_json``: code fences, prose around it, trailing commas, unclosed brackets).

    .venv/bin/python benchmarks/bench_embedded.py overhead                  # 20 prompts, 0.5B model
    .venv/bin/python benchmarks/bench_embedded.py parse -n 10 --domains huggingface multimedia dailylifeapis
    .venv/bin/python benchmarks/bench_embedded.py parse --model smollm2-135m -n 5
    .venv/bin/python benchmarks/bench_embedded.py speculative --model qwen2.5-coder-1.5b \
        --draft qwen2.5-coder-0.5b --k 2 4 -n 6 --threads 2 --n-ctx 4096

``speculative``  Decode tokens/s of a model on the plan prompts (2 fixed demos, the plan schema) of gold
              requests: plain, with a smaller model of the same vocabulary as a draft proposing k tokens, and
              with llama-cpp-python's prompt-lookup decoding; checks the texts are identical (greedy).

Results are printed and, with ``--json PATH``, written as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TASKBENCH_SHARED", ROOT.parent / "shared"))
REFERENCE = SHARED / "reference" / "taskbench"


def load_prompts(domain: str, n: int, seed: int) -> tuple[Any, list[tuple[str, list[dict[str, str]]]]]:
    """``(library, [(request id, messages)])`` for ``n`` requests of ``domain`` sampled with ``seed``."""
    from taskbench.dataset.layout import load_dataset
    from taskbench.predict.prompts import build_messages

    data = load_dataset(REFERENCE / domain)
    ids = sorted(data.requests)
    chosen = random.Random(seed).sample(ids, n)
    return data.library, [(i, build_messages(data.library, data.requests[i])) for i in chosen]


CAPS = {"task_steps": 10, "task_nodes": 10, "arguments": 8, "task_links": 12}
"""Array caps for the bounded schema (the reference gold graphs have at most 7 nodes and 6 links)."""
MAX_STRING = 300


def _cap(schema: Any, key: str | None = None) -> Any:
    if isinstance(schema, list):
        return [_cap(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        k: (_cap(v, k) if k != "properties" else {pk: _cap(pv, pk) for pk, pv in v.items()})
        for k, v in schema.items()
    }
    if out.get("type") == "array" and key in CAPS:
        out.setdefault("maxItems", CAPS[key])
    if out.get("type") == "string" and "enum" not in out:
        out.setdefault("maxLength", MAX_STRING)
    return out


def graph_schema(library: Any, *, bounded: bool = True) -> dict[str, Any]:
    """{task_steps: [str], task_nodes: [{task: <tool enum>, arguments: [...]}], task_links: [{source, target}]},
    from ``taskbench.llm.task_graph_schema``; ``bounded`` caps array lengths and string lengths so that a
    model caught in a repetition loop is forced to close the document (a 0.5B model does loop)."""
    from taskbench.llm import task_graph_schema

    schema = task_graph_schema(library, include_links=True)
    return _cap(schema) if bounded else schema


# ------------------------------------------------------------------------------------------------ parsing


def parses_strict(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def parses_reference(text: str) -> bool:
    content = text.replace("\n", "").replace("\\_", "_").replace("\\", "")
    at = content.find("RESULT #:")
    if at != -1:
        content = content[at + len("RESULT #:") :]
    content = content[content.find("{") : content.rfind("}") + 1]
    try:
        json.loads(content)
    except ValueError:
        return False
    return True


def parses_repair(text: str) -> bool:
    from taskbench.llm import JSONExtractionError, extract_json

    try:
        value = extract_json(text)
    except JSONExtractionError:
        return False
    return isinstance(value, dict)


# ------------------------------------------------------------------------------------------------ overhead


def bench_overhead(args: argparse.Namespace) -> dict[str, Any]:
    from llama_cpp import Llama, LlamaGrammar

    from taskbench.llm import GenerationConfig, get_model
    from taskbench.llm.weights import resolve_model_path

    library, prompts = load_prompts(args.domain, args.n, args.seed)
    schema = graph_schema(library, bounded=not args.unbounded)
    path = resolve_model_path(args.model)
    threads = args.threads or os.cpu_count() or 1
    settings = {"n_ctx": args.n_ctx, "n_threads": threads, "seed": 0}

    wrapper_note = "taskbench.llm.get_model (Model wrapper, cache off)"
    try:
        model = get_model(f"llamacpp/{args.model}", cache=False, **settings)
        config = GenerationConfig(max_tokens=args.max_tokens, temperature=0.0, top_p=1.0, seed=0)

        def through_wrapper(messages: list[dict[str, str]]) -> tuple[str, dict[str, Any]]:
            out = model.generate_sync(messages, schema=schema, config=config)
            return out.text, out.extra

        close_wrapper = model.close
    except ImportError:  # the Model wrapper is not there yet: measure the provider alone
        from taskbench.llm.base import ProviderRequest
        from taskbench.llm.providers.llamacpp import LlamaCppProvider

        wrapper_note = "LlamaCppProvider directly (Model wrapper not available)"
        provider = LlamaCppProvider(args.model, **settings)
        config = GenerationConfig(max_tokens=args.max_tokens, temperature=0.0, top_p=1.0, seed=0)

        def through_wrapper(messages: list[dict[str, str]]) -> tuple[str, dict[str, Any]]:
            resp = asyncio.run(provider.complete(ProviderRequest(messages, config, schema)))
            return resp.text, resp.extra

        def close_wrapper() -> None:
            asyncio.run(provider.aclose())

    llm = Llama(
        model_path=str(path),
        n_ctx=args.n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        n_batch=512,
        seed=0,
        verbose=False,
    )
    direct_evaluated: list[int] = []
    real_eval = llm.eval

    def counting_eval(tokens: Any) -> None:
        direct_evaluated.append(len(tokens))
        real_eval(tokens)

    llm.eval = counting_eval
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)

    def direct(messages: list[dict[str, str]]) -> tuple[str, int]:
        direct_evaluated.clear()
        out = llm.create_chat_completion(
            messages=messages, max_tokens=args.max_tokens, temperature=0.0, top_p=1.0, seed=0, grammar=grammar
        )
        return out["choices"][0]["message"]["content"], direct_evaluated[0] if direct_evaluated else 0

    # Load both sides before timing (the provider loads its model lazily, on the first request).
    warm = [{"role": "user", "content": "hi"}]
    through_wrapper(warm)
    llm.create_chat_completion(messages=warm, max_tokens=1, temperature=0.0)

    rows = []
    for i, (rid, messages) in enumerate(prompts):
        # Alternate which side goes first so neither always runs right after the other's work.
        order = ("direct", "wrapper") if i % 2 == 0 else ("wrapper", "direct")
        row: dict[str, Any] = {"id": rid}
        for side in order:
            start, cpu = time.perf_counter(), time.process_time()
            if side == "direct":
                text, evaluated = direct(messages)
                row["direct_s"] = time.perf_counter() - start
                row["direct_cpu"] = time.process_time() - cpu
                row["direct_text"], row["direct_evaluated"] = text, evaluated
            else:
                text, extra = through_wrapper(messages)
                row["wrapper_s"] = time.perf_counter() - start
                row["wrapper_cpu"] = time.process_time() - cpu
                row["wrapper_text"], row["wrapper_evaluated"] = text, extra.get("prompt_tokens_evaluated")
                row["prompt_tokens"] = extra.get("prompt_tokens_evaluated", 0) + extra.get(
                    "prompt_tokens_reused", 0
                )
        print(
            f"  {i + 1:2d}/{len(prompts)} {rid}: direct {row['direct_s']:.2f}s wrapper {row['wrapper_s']:.2f}s "
            f"evaluated {row['direct_evaluated']}/{row['wrapper_evaluated']} of {row['prompt_tokens']} prompt tokens",
            file=sys.stderr,
        )
        rows.append(row)
    close_wrapper()
    llm.close()

    # The first call of each side evaluates the whole shared prefix; the steady state is what the rest pay.
    direct_cpu = sum(r["direct_cpu"] for r in rows)
    wrapper_cpu = sum(r["wrapper_cpu"] for r in rows)
    direct_total = sum(r["direct_s"] for r in rows)
    wrapper_total = sum(r["wrapper_s"] for r in rows)
    steady = rows[1:]
    direct_steady = sum(r["direct_s"] for r in steady)
    wrapper_steady = sum(r["wrapper_s"] for r in steady)
    return {
        "benchmark": "overhead",
        "model": args.model,
        "measured_through": wrapper_note,
        "domain": args.domain,
        "n": len(rows),
        "threads": threads,
        "max_tokens": args.max_tokens,
        "direct_seconds": round(direct_total, 3),
        "wrapper_seconds": round(wrapper_total, 3),
        "overhead_pct": round(100 * (wrapper_total - direct_total) / direct_total, 2),
        "overhead_pct_after_first": round(100 * (wrapper_steady - direct_steady) / direct_steady, 2)
        if steady
        else None,
        "direct_cpu_seconds": round(direct_cpu, 3),
        "wrapper_cpu_seconds": round(wrapper_cpu, 3),
        "cpu_overhead_pct": round(100 * (wrapper_cpu - direct_cpu) / direct_cpu, 2),
        "identical_texts": sum(r["direct_text"] == r["wrapper_text"] for r in rows),
        "prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"] for r in rows), 1),
        "evaluated_first_call": rows[0]["wrapper_evaluated"],
        "evaluated_per_later_call_mean": round(statistics.mean(r["wrapper_evaluated"] for r in steady), 1)
        if steady
        else None,
        "evaluated_per_later_call_max": max((r["wrapper_evaluated"] for r in steady), default=None),
        "direct_evaluated_per_later_call_mean": round(
            statistics.mean(r["direct_evaluated"] for r in steady), 1
        )
        if steady
        else None,
        "host_load_1min_at_end": round(os.getloadavg()[0], 2),
    }


# ------------------------------------------------------------------------------------------------ parse


def bench_parse(args: argparse.Namespace) -> dict[str, Any]:
    from taskbench.llm.base import GenerationConfig, ProviderRequest
    from taskbench.llm.providers.llamacpp import LlamaCppProvider

    threads = args.threads or os.cpu_count() or 1
    provider = LlamaCppProvider(args.model, n_ctx=args.n_ctx, n_threads=threads, seed=0)
    config = GenerationConfig(max_tokens=args.max_tokens, temperature=0.0, top_p=1.0, seed=0)
    records = []

    async def one(messages: list[dict[str, str]], schema: dict[str, Any] | None) -> Any:
        return await provider.complete(ProviderRequest(messages, config, schema))

    for domain in args.domains:
        library, prompts = load_prompts(domain, args.n, args.seed)
        schema = graph_schema(library, bounded=not args.unbounded)
        for rid, messages in prompts:
            for mode in ("unconstrained", "constrained"):
                resp = asyncio.run(one(messages, schema if mode == "constrained" else None))
                rec = {
                    "domain": domain,
                    "id": rid,
                    "mode": mode,
                    "strict": parses_strict(resp.text),
                    "reference": parses_reference(resp.text),
                    "repair": parses_repair(resp.text),
                    "finish_reason": resp.finish_reason,
                    "completion_tokens": resp.completion_tokens,
                    "prompt_tokens": resp.prompt_tokens,
                    "prompt_tokens_evaluated": resp.extra.get("prompt_tokens_evaluated"),
                    "decode_seconds": resp.extra.get("decode_seconds", 0.0),
                    "prompt_seconds": resp.extra.get("prompt_seconds", 0.0),
                    "text": resp.text,
                }
                if mode == "constrained":
                    try:
                        import jsonschema

                        jsonschema.validate(json.loads(resp.text), schema)
                        rec["schema_valid"] = True
                    except Exception:
                        rec["schema_valid"] = False
                records.append(rec)
                print(
                    f"  {domain} {rid} {mode:13s} strict={rec['strict']!s:5} ref={rec['reference']!s:5} "
                    f"repair={rec['repair']!s:5} {rec['finish_reason']} {resp.completion_tokens} tok "
                    f"eval={rec['prompt_tokens_evaluated']}/{resp.prompt_tokens}",
                    file=sys.stderr,
                )
    asyncio.run(provider.aclose())

    summary: dict[str, Any] = {
        "benchmark": "parse",
        "model": args.model,
        "domains": args.domains,
        "n_per_mode": len(records) // 2,
        "schema": "unbounded" if args.unbounded else f"bounded {CAPS}, strings <= {MAX_STRING} chars",
        "threads": threads,
        "max_tokens": args.max_tokens,
    }
    for mode in ("unconstrained", "constrained"):
        rs = [r for r in records if r["mode"] == mode]
        decode_tokens = sum(max(r["completion_tokens"] - 1, 0) for r in rs)
        decode_seconds = sum(r["decode_seconds"] for r in rs)
        summary[mode] = {
            "fail_strict": sum(not r["strict"] for r in rs),
            "fail_reference": sum(not r["reference"] for r in rs),
            "fail_repair": sum(not r["repair"] for r in rs),
            "hit_max_tokens": sum(r["finish_reason"] == "length" for r in rs),
            "decode_tokens_per_s": round(decode_tokens / decode_seconds, 2) if decode_seconds else None,
            "completion_tokens_mean": round(statistics.mean(r["completion_tokens"] for r in rs), 1),
        }
        if mode == "constrained":
            summary[mode]["schema_invalid"] = sum(not r.get("schema_valid") for r in rs)
    later = [r for r in records if r["prompt_tokens_evaluated"] is not None][1:]
    summary["prompt_tokens_mean"] = round(statistics.mean(r["prompt_tokens"] for r in records), 1)
    summary["prompt_tokens_evaluated_mean_after_first"] = (
        round(statistics.mean(r["prompt_tokens_evaluated"] for r in later), 1) if later else None
    )
    summary["host_load_1min_at_end"] = round(os.getloadavg()[0], 2)
    if args.records:
        Path(args.records).write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return summary


class DraftModel:
    """A llama-cpp-python draft model (``LlamaDraftModel``'s call) from a second, smaller ``Llama`` with the same
    vocabulary: it keeps its own KV cache (the longest common prefix with the last call is reused) and proposes
    ``k`` greedy tokens. No grammar: the target model's constrained sampler accepts or rejects them."""

    def __init__(self, llm: Any, k: int) -> None:
        import numpy as np

        self.llm, self.k, self.np = llm, k, np
        self.proposed = self.calls = 0

    def __call__(self, input_ids: Any, /, **kwargs: Any) -> Any:
        import llama_cpp

        np, d = self.np, self.llm
        ids = [int(t) for t in input_ids]
        cached = d.input_ids[: d.n_tokens].tolist()
        common = 0
        while common < min(len(cached), len(ids)) and cached[common] == ids[common]:
            common += 1
        common = min(common, len(ids) - 1)  # evaluate at least one token, for its logits
        d.n_tokens = common
        d.eval(ids[common:])
        out = []
        for _ in range(self.k):
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(d._ctx.ctx, -1), shape=(d.n_vocab(),))
            token = int(logits.argmax())
            if llama_cpp.llama_vocab_is_eog(d._model.vocab, token):
                break
            out.append(token)
            d.eval([token])
        self.calls += 1
        self.proposed += len(out)
        return np.array(out, dtype=np.intc)


def bench_speculative(args: argparse.Namespace) -> dict[str, Any]:
    """Decode tokens/s of ``--model`` on the plan prompts of ``-n`` gold requests: plain, with ``--draft`` as a
    draft model proposing k tokens (each ``--k``), and with prompt-lookup decoding; identical texts checked."""
    import functools

    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from taskbench.dataset.layout import load_dataset
    from taskbench.llm.base import GenerationConfig, ProviderRequest
    from taskbench.llm.providers.llamacpp import LlamaCppProvider
    from taskbench.llm.weights import resolve_model_path
    from taskbench.predict.context import RequestContext
    from taskbench.predict.prompts import build_messages
    from taskbench.predict.runner import PredictOptions, select_samples

    data = load_dataset(REFERENCE / args.domain)
    options = PredictOptions(shots=2, demo_selection="fixed", max_tokens=args.max_tokens)
    context = RequestContext(data.library, data.samples, options, dataset_name=args.domain)
    chosen = select_samples(data.samples, args.n)
    prompts = []
    for sample in chosen:
        request = data.requests.get(sample.id, sample.user_request)
        demos, schema = context.for_sample(sample.id, request)
        prompts.append((sample.id, build_messages(data.library, request, demos, plan=True), schema))
    threads = args.threads or os.cpu_count() or 1
    variants: list[tuple[str, Any]] = [("plain", None)]
    if args.draft:
        variants += [(f"draft {args.draft} k={k}", ("draft", k)) for k in args.k]
    variants.append(("prompt lookup (10)", ("lookup", 10)))
    results: dict[str, Any] = {"model": args.model, "domain": args.domain, "n": len(prompts), "threads": threads,
                               "load_before": os.getloadavg()[0], "variants": {}}
    texts: dict[str, list[str]] = {}
    for name, how in variants:
        draft = None
        extra: dict[str, Any] = {}
        if how is not None and how[0] == "draft":
            small = llama_cpp.Llama(model_path=str(resolve_model_path(args.draft)), n_ctx=args.n_ctx,
                                    n_threads=threads, n_threads_batch=threads, n_batch=512, verbose=False)
            draft = DraftModel(small, how[1])
            extra = {"draft_model": draft, "logits_all": True}
        elif how is not None:
            extra = {"draft_model": LlamaPromptLookupDecoding(num_pred_tokens=how[1]), "logits_all": True}
        provider = LlamaCppProvider(args.model, n_ctx=args.n_ctx, n_threads=threads)
        if extra:  # llama-cpp-python sizes its logits buffer by logits_all, which a draft model needs
            module = provider._llama_cpp
            provider._llama_cpp = type("M", (), {"Llama": staticmethod(functools.partial(module.Llama, **extra))})
        tokens = decode = 0.0
        rows = []
        texts[name] = []
        t0 = time.perf_counter()
        for sid, messages, schema in prompts:
            resp = asyncio.run(provider.complete(ProviderRequest(
                messages, GenerationConfig(max_tokens=args.max_tokens, temperature=0.0), json_schema=schema)))
            tokens += resp.completion_tokens
            decode += float(resp.extra.get("decode_seconds") or 0.0)
            texts[name].append(resp.text)
            rows.append({"id": sid, "tokens": resp.completion_tokens, "decode_s": resp.extra.get("decode_seconds"),
                         "prompt_s": resp.extra.get("prompt_seconds")})
        wall = time.perf_counter() - t0
        asyncio.run(provider.aclose())
        results["variants"][name] = {
            "decode_tokens_per_s": round(tokens / decode, 2) if decode else None, "tokens": tokens,
            "decode_seconds": round(decode, 1), "wall_seconds": round(wall, 1),
            "same_text_as_plain": texts[name] == texts["plain"],
            "load_after": os.getloadavg()[0], "rows": rows,
            **({"draft_calls": draft.calls, "draft_tokens_proposed": draft.proposed} if draft else {}),
        }
        print(f"{name}: {results['variants'][name]['decode_tokens_per_s']} tok/s, wall {wall:.0f} s, "
              f"same text {texts[name] == texts['plain']}, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--model", default="qwen2.5-coder-0.5b", help="llamacpp alias or GGUF path")
    common.add_argument("-n", type=int, default=20, help="requests (per domain for 'parse')")
    common.add_argument("--seed", type=int, default=0, help="seed for choosing the requests")
    common.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    common.add_argument("--n-ctx", type=int, default=8192)
    common.add_argument("--json", default=None, help="also write the summary as JSON here")
    common.add_argument("--unbounded", action="store_true", help="no maxItems/maxLength caps in the schema")
    p_over = sub.add_parser("overhead", parents=[common], help="Model wrapper vs direct llama-cpp-python")
    p_over.add_argument("--domain", default="huggingface")
    p_over.add_argument("--max-tokens", type=int, default=96)
    p_parse = sub.add_parser("parse", parents=[common], help="parse failures unconstrained vs constrained")
    p_parse.add_argument("--domains", nargs="+", default=["huggingface"])
    p_parse.add_argument("--max-tokens", type=int, default=768)
    p_parse.add_argument("--records", default=None, help="write every answer as JSONL here")
    p_spec = sub.add_parser("speculative", parents=[common], help="decode speed with a draft model")
    p_spec.add_argument("--domain", default="huggingface")
    p_spec.add_argument("--draft", default=None, help="draft model alias, e.g. qwen2.5-coder-0.5b")
    p_spec.add_argument("--k", type=int, nargs="+", default=[4], help="draft tokens per step")
    p_spec.add_argument("--max-tokens", type=int, default=512)
    args = parser.parse_args(argv)
    if not REFERENCE.is_dir():
        print(f"reference data not found at {REFERENCE} (set TASKBENCH_SHARED)", file=sys.stderr)
        return 2
    bench = {"overhead": bench_overhead, "parse": bench_parse, "speculative": bench_speculative}[args.command]
    summary = bench(args)
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
