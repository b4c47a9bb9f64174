"""The embedded ``llamacpp`` provider: a GGUF model run in-process by llama-cpp-python, no server, no key.

``get_model("llamacpp/qwen2.5-coder-0.5b")`` (the default embedded model), ``llamacpp/smollm2-135m`` (the tiny
test model) or ``llamacpp/path/to/model.gguf``; see :mod:`taskbench.llm.weights` for where the weights come
from. ``BASE+ADAPTER`` (``llamacpp/qwen2.5-coder-0.5b+students/grounding``) runs the base with a LoRA adapter
applied: ADAPTER is a GGUF LoRA file or a directory holding ``adapter.gguf`` (what ``taskbench agents distill``
writes). Options (keyword arguments of ``get_model``):

``n_ctx``      context window in tokens (default 8192: the TaskBench prompt with a full tool list and demos
               fits with room for the answer)
``n_threads``  CPU threads for decoding and prompt evaluation (default ``os.cpu_count()``)
``n_batch``    prompt evaluation batch size (default 512)
``seed``       sampling seed used when a request has none (default 0, so runs repeat)
``verbose``    let llama.cpp log to stderr (default False)

How a call runs:

- The model is loaded lazily, once, on the first request. llama.cpp contexts are not thread-safe, so every
  generation runs in a worker thread (``asyncio.to_thread``) under one lock, and :attr:`max_concurrency` is 1.
- Messages are rendered with the chat template stored in the GGUF file (:func:`.llamacpp_tools.render_prompt`,
  which runs templates as llama-cpp-python's ``create_chat_completion`` and transformers do), tokenised with the
  GGUF's own tokenizer (:func:`prompt_tokens`), then completed from the token list. Students are trained on the
  same rendering (``taskbench.distill.train.encode``).
- **KV prefix cache.** The context keeps the tokens (and their KV cache) of the previous call; a new prompt
  reuses the longest common token prefix and evaluates only the rest. Prompts that put everything shared (tool
  list, instructions, demos) first and the sample last therefore pay for the shared part once. The number of
  prompt tokens actually evaluated is reported as ``extra["prompt_tokens_evaluated"]``.
- **Structured output.** A request's JSON Schema becomes a llama.cpp grammar, so the output always parses and
  fits the schema (unless cut off by ``max_tokens``); an empty schema or a bare ``{"type": "object"}`` means "any
  JSON object" and uses a generic JSON grammar.
- **Tool calls.** With ``tools``, the answer is a ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  block (the format Qwen2.5's template teaches) under a grammar with one alternative per offered tool, each
  with that tool's own argument schema, so a call always names an offered tool and its arguments always fit
  (unless cut off by ``max_tokens``). ``tool_choice`` ``required`` or a tool's name makes a call the whole
  answer; ``auto`` lets the model write text instead. Templates that do not know tools get them described in
  the system message (see :mod:`.llamacpp_tools`).
- **Timeouts.** A request's timeout stops generation at the next token and raises
  :class:`~taskbench.llm.base.TransientProviderError`; so does cancelling the awaiting task (prompt evaluation
  itself cannot be interrupted).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, ClassVar

from ...errors import ConfigError, ContextLengthError, InputError, MissingDependencyError
from ..base import Provider, ProviderRequest, ProviderResponse, TransientProviderError, first_repeat
from ..native import ensure_llama_runs
from ..weights import DEFAULT_ALIAS, KNOWN_WEIGHTS, check_model_name, resolve_model_path
from .llamacpp_tools import (
    ChatFormat,
    offered_tools,
    parse_tool_output,
    render_messages,
    render_prompt,
    tool_grammar,
)

__all__ = ["STUDENT_ROLES", "LlamaCppProvider", "chat_format", "import_llama_cpp", "prompt_tokens", "shipped_roles",
           "split_adapter", "student_file"]

_OPTIONS = {"n_ctx", "n_threads", "n_batch", "seed", "verbose"}
# Options the Model wrapper / CLI may pass for every provider; meaningless here but harmless.
_GENERIC_OPTIONS = {"concurrency", "timeout", "api_key_env", "api_key", "base_url", "cache", "max_retries"}
_GRAMMAR_CACHE_SIZE = 16


def import_llama_cpp() -> Any:
    """Import ``llama_cpp`` or raise :class:`MissingDependencyError` with the exact pip line."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingDependencyError(
            "llama-cpp-python", "llamacpp", "the embedded 'llamacpp' model provider"
        ) from exc
    return llama_cpp


def _is_generic_object(schema: dict[str, Any]) -> bool:
    """True for schemas that only say "a JSON object" (``{}``, ``{"type": "object"}``)."""
    meaningful = {k: v for k, v in schema.items() if k not in ("title", "description", "$schema")}
    return not meaningful or meaningful == {"type": "object"}


STUDENTS_DIR = Path(__file__).resolve().parents[2] / "bundled" / "students"
"""Where the shipped students live (package data: ``taskbench/bundled/students/ROLE.gguf``)."""
STUDENT_ROLES = ("grounding", "execution", "review", "react")
"""Roles with a student shipped in taskbench (``llamacpp/qwen2.5-coder-0.5b+student:ROLE``)."""


def shipped_roles() -> list[str]:
    """The roles (of :data:`STUDENT_ROLES`, in order) whose student ships (``ROLE.gguf`` in :data:`STUDENTS_DIR`)."""
    return [role for role in STUDENT_ROLES if (STUDENTS_DIR / f"{role}.gguf").is_file()]


def student_file(role: str) -> Path:
    """The shipped student of ``role`` (a GGUF LoRA of the embedded 0.5B model, under
    ``taskbench/bundled/students/``); an InputError naming how to make it when it is not there."""
    if role not in STUDENT_ROLES:
        raise InputError(f"no student role {role!r} (roles: {', '.join(STUDENT_ROLES)})")
    path = STUDENTS_DIR / f"{role}.gguf"
    if not path.is_file():
        raise InputError(f"no shipped {role} student", path=path,
                         hint="`make students` trains them (docs/distill.md), or give BASE+ADAPTER_DIR")
    return path


def _file_sha256(path: str) -> str:
    """The content hash of an adapter file (adapters are a few MB): the same student anywhere has one cache
    identity, and a retrained one another, whatever the file's path or time."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def split_adapter(model: str) -> tuple[str, str | None]:
    """``BASE+ADAPTER`` -> (BASE, the GGUF LoRA file); a model string without ``+`` -> (model, None). ADAPTER is
    a GGUF file or a directory with ``adapter.gguf``; anything else is an InputError naming what to do."""
    if "+" not in model:
        return model, None
    base, adapter = model.split("+", 1)
    path = student_file(adapter[len("student:"):]) if adapter.startswith("student:") else Path(adapter).expanduser()
    if path.is_dir():
        path = path / "adapter.gguf"
    if not path.is_file():
        raise InputError("no GGUF LoRA adapter here", path=path,
                         hint="give BASE+DIR with DIR written by `taskbench agents distill`, or BASE+FILE.gguf")
    with path.open("rb") as fh:
        if fh.read(4) != b"GGUF":
            raise InputError("not a GGUF file (a LoRA adapter must be converted to GGUF)", path=path)
    return base, str(path)


def chat_format(llm: Any) -> ChatFormat | None:
    """The chat template of a loaded ``llama_cpp.Llama`` (from its GGUF file) with the text of its BOS and EOS
    tokens; None when the file has no template."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None

    def token_text(token_id: int) -> str:
        return "" if token_id == -1 else str(llm.detokenize([token_id], special=True).decode("utf-8", errors="ignore"))

    return ChatFormat(template=template, bos_token=token_text(llm.token_bos()), eos_token=token_text(llm.token_eos()))


def prompt_tokens(llm: Any, chat: ChatFormat, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
                  ) -> list[int]:
    """The token ids the provider completes for ``messages`` and ``tools`` (as
    :func:`.llamacpp_tools.offered_tools` leaves them): :func:`.llamacpp_tools.render_prompt`, tokenised with
    special tokens parsed and no BOS added (a template that wants one writes it)."""
    text = render_prompt(chat, messages, tools)
    return [int(t) for t in llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)]


class _Deadline:
    """A llama-cpp-python stopping criterion: stop at the deadline or when the caller went away."""

    def __init__(self, timeout: float | None, cancelled: threading.Event) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.cancelled = cancelled
        self.fired: str | None = None
        self.first_token_at: float | None = None

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        now = time.monotonic()
        if self.first_token_at is None:
            self.first_token_at = now
        if self.cancelled.is_set():
            self.fired = "cancelled"
        elif self.deadline is not None and now > self.deadline:
            self.fired = "timeout"
        return self.fired is not None


class _RepeatStop:
    """A llama-cpp-python stopping criterion: stop once the answer repeats itself by ``stop_repeat``
    (:func:`taskbench.llm.base.first_repeat`), so a loop costs one turn instead of the rest of the token budget."""

    def __init__(self, llm: Any, pattern: str, prompt_tokens: int) -> None:
        self.llm, self.pattern = llm, pattern
        self.data = bytearray()
        self.seen = prompt_tokens
        self.cut: int | None = None

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self.cut is not None:
            return True
        ids = [int(t) for t in input_ids[self.seen:]]
        if not ids:
            return False
        self.data += self.llm.detokenize(ids)  # bytes concatenate: no earlier tokens needed
        self.seen += len(ids)
        if b'"' not in self.data[-8 * len(ids) - 8:]:  # a match ends at a quote; skip the regex otherwise
            return False
        self.cut = first_repeat(self.pattern, self.data.decode("utf-8", errors="ignore"))
        return self.cut is not None


class LlamaCppProvider(Provider):
    """Embedded llama.cpp over a GGUF file (a known alias or a path)."""

    name = "llamacpp"
    # a local model is deterministic and only slow, never flaky: a timed-out attempt would be retried to the same
    # end, so allow long answers on a slow machine and do not retry
    wrapper_defaults: ClassVar[dict[str, Any]] = {"timeout": 900.0, "max_retries": 0}

    @classmethod
    def accepts(cls, option: str) -> bool:
        """The llamacpp options, plus the wrapper's concurrency and timeout; not base_url or API keys."""
        return option in _OPTIONS or option in ("concurrency", "timeout")

    def __init__(self, model: str = DEFAULT_ALIAS, **options: Any) -> None:
        unknown = sorted(set(options) - _OPTIONS - _GENERIC_OPTIONS)
        if unknown:
            raise ConfigError(
                f"unknown option(s) for the llamacpp provider: {', '.join(unknown)}; "
                f"known: {', '.join(sorted(_OPTIONS))}"
            )
        if options.get("base_url"):
            raise ConfigError("the llamacpp provider runs the model in-process and takes no base URL")
        base, lora_path = split_adapter(model)
        check_model_name(base)  # a misspelled alias fails here, before any output file or progress bar
        super().__init__(model, **options)
        self._llama_cpp = import_llama_cpp()
        self.n_ctx = int(options.get("n_ctx") or 8192)
        self.n_threads = int(options.get("n_threads") or os.cpu_count() or 1)
        self.n_batch = int(options.get("n_batch") or 512)
        seed = options.get("seed")
        self.seed = 0 if seed is None else int(seed)
        self.verbose = bool(options.get("verbose", False))
        self._lock = threading.Lock()
        self._llm: Any = None
        self._chat: ChatFormat | None = None
        self._evaluated: list[int] = []
        self._grammars: OrderedDict[str, Any] = OrderedDict()
        self.base, self.lora_path = base, lora_path

    # ------------------------------------------------------------------------------------------ contract

    def identity(self) -> dict[str, Any]:
        """Provider, model and what pins the weights (SHA-256 for aliases; size and mtime for a path)."""
        ident: dict[str, Any] = {"provider": self.name, "model": self.model, "base_url": None}
        known = KNOWN_WEIGHTS.get(self.base.strip().lower())
        if known is not None:
            ident["sha256"] = known.sha256
        else:
            try:
                st = os.stat(os.path.expanduser(self.base))
                ident["file"] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
            except OSError:
                pass
        if self.lora_path is not None:  # a retrained adapter is another model: the cache must not mix them
            ident["lora"] = {"sha256": _file_sha256(self.lora_path)}
        return ident

    @property
    def max_concurrency(self) -> int:
        """One: a llama.cpp context runs one generation at a time."""
        return 1

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        cancelled = threading.Event()
        try:
            return await asyncio.to_thread(self._complete_sync, request, cancelled)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def stream(self, request: ProviderRequest) -> AsyncIterator[str | ProviderResponse]:
        """Yield the answer's text as it is decoded, then the :class:`ProviderResponse` (as :meth:`complete`)."""
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[str | None] = asyncio.Queue()
        cancelled = threading.Event()

        def put(text: str) -> None:
            loop.call_soon_threadsafe(pieces.put_nowait, text)

        job = asyncio.ensure_future(asyncio.to_thread(self._complete_sync, request, cancelled, put))
        job.add_done_callback(lambda _: pieces.put_nowait(None))
        try:
            while (piece := await pieces.get()) is not None:
                yield piece
            yield await job
        except BaseException:
            cancelled.set()
            job.cancel()
            raise

    async def aclose(self) -> None:
        await asyncio.to_thread(self._close_sync)

    # ------------------------------------------------------------------------------------------ internals

    def _close_sync(self) -> None:
        with self._lock:
            if self._llm is not None:
                close = getattr(self._llm, "close", None)
                if close is not None:
                    close()
                self._llm = None
                self._chat = None

    def _load(self) -> Any:
        """Load the model (once) and wrap its ``eval`` to count the prompt tokens each call evaluates."""
        if self._llm is not None:
            return self._llm
        path = resolve_model_path(self.base)
        # a llama.cpp build that uses instructions this CPU lacks would kill this process at the first decode
        # (SIGILL); try it once in a child process first (remembered per build, CPU and model file)
        ensure_llama_runs(path, n_threads=self.n_threads)
        llm = self._llama_cpp.Llama(
            model_path=str(path),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            n_batch=self.n_batch,
            seed=self.seed,
            verbose=self.verbose,
            **({"lora_path": self.lora_path} if self.lora_path else {}),
        )
        evaluate = llm.eval
        counts = self._evaluated

        def counting_eval(tokens: Any) -> None:
            counts.append(len(tokens))
            evaluate(tokens)

        llm.eval = counting_eval
        self._chat = chat_format(llm)
        self._llm = llm
        return llm

    def _grammar(self, schema: dict[str, Any] | None, tools: list[dict[str, Any]] | None = None,
                 tool_choice: Any = None) -> Any:
        if schema is None and not tools:
            return None
        key = json.dumps([schema, tools, tool_choice], sort_keys=True)
        grammar = self._grammars.get(key)
        if grammar is not None:
            self._grammars.move_to_end(key)
            return grammar
        from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

        try:
            if tools:
                grammar = LlamaGrammar.from_string(tool_grammar(tools, tool_choice), verbose=False)
            elif schema is not None and _is_generic_object(schema):
                grammar = LlamaGrammar.from_string(JSON_GBNF, verbose=False)
            else:
                from ..grammar import schema_to_gbnf

                grammar = LlamaGrammar.from_string(schema_to_gbnf(schema or {}), verbose=False)
        except Exception as exc:  # the converter raises bare exceptions for unsupported constructs
            what = "the tools' argument schemas" if tools else "the JSON Schema"
            raise ConfigError(f"cannot turn {what} into a llama.cpp grammar: {exc}") from exc
        self._grammars[key] = grammar
        while len(self._grammars) > _GRAMMAR_CACHE_SIZE:
            self._grammars.popitem(last=False)
        return grammar

    def _complete_sync(
        self, request: ProviderRequest, cancelled: threading.Event, on_text: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        with self._lock:
            if cancelled.is_set():
                raise TransientProviderError("cancelled before it started")
            llm = self._load()
            tools = offered_tools(request.tools, request.tool_choice)
            grammar = self._grammar(None if tools else request.json_schema, tools, request.tool_choice)
            cfg = request.config
            deadline = _Deadline(request.timeout, cancelled)
            params: dict[str, Any] = {
                "max_tokens": cfg.max_tokens,
                "temperature": cfg.temperature,
                "top_p": cfg.top_p,
                "seed": self.seed if cfg.seed is None else cfg.seed,
                "grammar": grammar,
            }
            self._evaluated.clear()
            started = time.monotonic()
            try:
                if self._chat is not None:
                    out = self._complete_formatted(llm, self._chat, tools, request, params, deadline,
                                                   None if tools else on_text)
                else:  # no template in the GGUF: llama-cpp-python's own chat format (no mid-run timeout)
                    messages, _ = render_messages(request.messages, tools, False)
                    out = llm.create_chat_completion(messages=messages, stop=list(cfg.stop), **params)
                    if on_text is not None and not tools:
                        on_text(out["choices"][0]["message"]["content"] or "")
            except ValueError as exc:
                if "exceed context window" in str(exc):
                    raise ContextLengthError(
                        f"{exc}; raise the llamacpp option n_ctx (now {self.n_ctx}) or shorten the prompt"
                    ) from exc
                raise
            ended = time.monotonic()
            evaluated = list(self._evaluated)
        if deadline.fired == "timeout":
            raise TransientProviderError(f"the embedded model did not finish within {request.timeout:g} s")
        if deadline.fired == "cancelled":
            raise TransientProviderError("cancelled")
        choice = out["choices"][0]
        text = choice["message"]["content"] if "message" in choice else choice["text"]
        usage = out.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        completion_tokens = int(usage.get("completion_tokens", 0))
        prompt_evaluated = evaluated[0] if evaluated else 0
        first = deadline.first_token_at
        extra: dict[str, Any] = {
            "prompt_tokens_evaluated": prompt_evaluated,
            "prompt_tokens_reused": max(prompt_tokens - prompt_evaluated, 0),
            "seconds": round(ended - started, 6),
        }
        if first is not None:
            extra["prompt_seconds"] = round(first - started, 6)
            extra["decode_seconds"] = round(ended - first, 6)
        finish = choice.get("finish_reason")
        calls: list[dict[str, Any]] = []
        text = text or ""
        if tools:
            text, calls = parse_tool_output(text)
            if calls and finish == "stop":
                finish = "tool_calls"
        return ProviderResponse(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=finish,
            extra=extra,
            tool_calls=calls,
        )

    def _complete_formatted(
        self,
        llm: Any,
        chat: ChatFormat,
        tools: list[dict[str, Any]] | None,
        request: ProviderRequest,
        params: dict[str, Any],
        deadline: _Deadline,
        on_text: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Render with the GGUF chat template and complete from tokens (what create_chat_completion does,
        plus a stopping criterion for timeouts and cancellation); the answer ends at the EOS token. With
        ``on_text``, decode streaming and hand each piece of text to it as it comes."""
        from llama_cpp import StoppingCriteriaList

        tokens = prompt_tokens(llm, chat, request.messages, tools)
        stop = list(request.config.stop)
        if chat.eos_token:
            stop.append(chat.eos_token)
        criteria: list[Any] = [deadline]
        repeat = None
        if request.config.stop_repeat is not None and not tools:
            repeat = _RepeatStop(llm, request.config.stop_repeat, len(tokens))
            criteria.append(repeat)
        eos = llm.token_eos()
        if eos != -1:
            criteria.append(lambda ids, logits: int(ids[-1]) == eos)
        out = llm.create_completion(
            prompt=tokens,
            stop=stop,
            stopping_criteria=StoppingCriteriaList(criteria),
            repeat_penalty=1.0,
            stream=on_text is not None,
            **params,
        )
        if on_text is not None:
            parts: list[str] = []
            finish = None
            for chunk in out:
                piece = chunk["choices"][0]
                if piece.get("text"):
                    parts.append(piece["text"])
                    on_text(piece["text"])
                finish = piece.get("finish_reason") or finish
            text = "".join(parts)
            # streamed chunks carry no usage: count the answer's tokens (a re-tokenisation of its text)
            generated = len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
            out = {"choices": [{"text": text, "finish_reason": finish}],
                   "usage": {"prompt_tokens": len(tokens), "completion_tokens": generated}}
        choice = out["choices"][0]
        text, finish = choice["text"], choice["finish_reason"]
        if repeat is not None and repeat.cut is not None:
            # cut where the repeat starts (the Model wrapper cuts the same place from any backend's text)
            cut = first_repeat(request.config.stop_repeat or "", text)
            text, finish = (text if cut is None else text[:cut]), "repeat"
        return {
            "choices": [
                {
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": out.get("usage"),
        }
