"""A minimal search-tool agent and closed-book answers: the demo's model outputs.

Deliberately small (a fixture, not a product): a ReAct-style text loop against any
OpenAI-compatible chat endpoint (the demo uses llama-server serving SmolLM2-135M
and Gemma 3 270M). Each turn the model writes ``Thought: ...`` and then either
``Action: search[query]`` or ``Answer: ...``; a GBNF grammar (llama-server's
``grammar`` field) holds the tiny models to that shape: the first turn may only
search (every trajectory has an intermediate turn to judge), and after
``max_searches`` searches only an answer is admitted. The
``search`` tool ignores the query and returns the instance's two passages (the
controlled-conflict design supplies the evidence; ISE section 2.1). After
``max_turns`` turns without an answer the run is ``truncated``.

Every request is temperature 0 with a fixed ``seed`` and ``cache_prompt: false``
(llama-server's prompt cache otherwise makes temperature-0 output depend on
earlier requests), on a connection of its own: llama-server's router closes each
connection after a proxied reply although it announces keep-alive, so a pooled
connection reused at once loses the request. A connection dropped anyway is retried
a bounded number of times with backoff; a refused one means no server. Runs go to
the ISE JSONL schema that ``samples``' ``ise`` adapter reads; closed-book answers go
to records the ``responses`` adapter reads, each carrying its EHQ item
(``ehq_item``) for the ehq rule classifier.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from apps.demo.conflict import DATASET, ConflictInstance
from apps.demo.items import DEFAULT_SEED, DemoItem
from samples import InputError

AGENT_NAME = "accord-demo-agent"
TOOL_NAME = "search"
SYSTEM_PROMPT = (
    "You are a question-answering agent with one tool: search returns passages about a query.\n"
    "Reply in two lines. First 'Thought: ' and your reasoning. Then either 'Action: search[' your query ']'\n"
    "to search, or 'Answer: ' and your final answer to the user once the passages let you answer.\n"
    "Example:\nThought: I need the year Acme was founded.\nAction: search[Acme founding year]\n"
    "Observation: [1] Source 1: Acme was founded in 1990.\nThought: The source says 1990.\nAnswer: 1990"
)
OBSERVATION_NOTE = "Answer the question now if these passages allow it."
# GBNF for llama-server: the first turn must search; later turns search or answer.
_LINE = 'line ::= [^\\n]+\nquery ::= [^\\]\\n]+\n'
FIRST_TURN_GRAMMAR = 'root ::= "Thought: " line "\\nAction: search[" query "]"\n' + _LINE
TURN_GRAMMAR = 'root ::= "Thought: " line "\\n" ("Action: search[" query "]" | "Answer: " line)\n' + _LINE
ANSWER_GRAMMAR = 'root ::= "Thought: " line "\\nAnswer: " line\n' + _LINE
_SEARCH = re.compile(r"^Action:\s*search\[(?P<query>[^\]\n]*)\]\s*$", re.MULTILINE)
_ANSWER = re.compile(r"^Answer:\s*(?P<answer>.+?)\s*$", re.MULTILINE)
_THOUGHT = re.compile(r"^Thought:\s*(?P<thought>.*?)\s*$", re.MULTILINE)
RETRY_NOTE = "Your last reply had no complete Action or Answer line. Reply with 'Action: search[...]' or 'Answer: ...'."


@dataclass(frozen=True, kw_only=True)
class DemoModel:
    """A model the demo runs: its name on the server and the backbone id recorded in the data."""

    name: str
    backbone: str

    def __post_init__(self) -> None:
        for field in ("name", "backbone"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"DemoModel: {field} must be a non-empty string, got {value!r}")


# The two open-weight families `judges.local_server.LlamaServer` serves.
DEMO_MODELS: tuple[DemoModel, ...] = (
    DemoModel(name="smollm2", backbone="smollm2-135m-instruct"),
    DemoModel(name="gemma3-270m", backbone="gemma-3-270m"),
)


@dataclass(frozen=True, kw_only=True)
class AgentConfig:
    """How the demo agent is run; the fields that shape the outputs are recorded in each trajectory's metadata."""

    max_turns: int = 3
    # Searches allowed; after the last one the grammar admits only an answer (the tiny
    # models otherwise search until max_turns). max_searches >= max_turns lets runs truncate.
    max_searches: int = 2
    max_tokens: int = 64
    seed: int = DEFAULT_SEED
    # Requests in flight per model. llama.cpp decodes concurrent requests in one batch,
    # and the batch composition changes temperature-0 output (llama.cpp issue 7052), so
    # the default 1 keeps runs reproducible; the two models still run side by side.
    concurrency_per_model: int = 1
    timeout_s: float = 600.0
    # Retries of a request whose connection the server dropped (not of a refused connection:
    # that is no server, reported at once); waits retry_backoff_s, then doubles it.
    connection_retries: int = 3
    retry_backoff_s: float = 0.5

    def __post_init__(self) -> None:
        for field in ("max_turns", "max_searches", "max_tokens", "concurrency_per_model"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"AgentConfig: {field} must be a positive integer, got {value!r}")
        value = self.connection_retries
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"AgentConfig: connection_retries must be a non-negative integer, got {value!r}")
        if isinstance(self.retry_backoff_s, bool) or not isinstance(self.retry_backoff_s, int | float) \
                or not self.retry_backoff_s > 0:
            raise InputError(f"AgentConfig: retry_backoff_s must be a positive number, got {self.retry_backoff_s!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InputError(f"AgentConfig: seed must be an integer, got {self.seed!r}")
        if not isinstance(self.timeout_s, int | float) or not self.timeout_s > 0:
            raise InputError(f"AgentConfig: timeout_s must be a positive number, got {self.timeout_s!r}")


@dataclass(frozen=True, kw_only=True)
class RunReport:
    """What a batch of model calls cost: wall time, requests and tokens (never stored in the records)."""

    n_records: int
    n_requests: int
    wall_s: float
    completion_tokens: int
    truncated: int
    retries: int


def search_result(instance: ConflictInstance) -> str:
    """What the ``search`` tool returns: the instance's passages, numbered as sources."""
    return "\n".join(f"[{i}] Source {i}: {passage}" for i, passage in enumerate(instance.passages, start=1))


@dataclass(frozen=True, kw_only=True)
class _Turn:
    thought: str | None
    query: str | None
    answer: str | None
    raw: str


def parse_turn(raw: str, *, complete: bool) -> _Turn:
    """Read one model turn; an answer cut off by the token limit is not an answer."""
    thought = _THOUGHT.search(raw)
    search = _SEARCH.search(raw)
    answer = _ANSWER.search(raw) if complete else None
    return _Turn(thought=thought["thought"] if thought else None, query=search["query"].strip() if search else None,
                 answer=answer["answer"] if answer and not search else None, raw=raw)


def _refused(error: BaseException | None) -> bool:
    """Whether nothing accepted the connection (no server), as opposed to a connection dropped once made."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, ConnectionRefusedError):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


class _Client:
    """One AsyncOpenAI client with a shared concurrency limit and call counters."""

    def __init__(self, base_url: str, config: AgentConfig) -> None:
        try:
            from openai import AsyncOpenAI
        except ImportError:
            raise InputError("the demo agent needs the `openai` package: pip install 'accord[judges]'") from None
        self.base_url = base_url.rstrip("/")
        # `Connection: close`: llama-server's router (cpp-httplib) sends `Keep-Alive` with each proxied
        # reply and then closes the connection; a request the pool sends on it before the close arrives
        # is lost ("Server disconnected without sending a response"). One connection per request is
        # what the router does anyway.
        self.client = AsyncOpenAI(base_url=f"{self.base_url}/v1", api_key="local", timeout=config.timeout_s,
                                  max_retries=0, default_headers={"Connection": "close"})
        self.config = config
        self.limits: dict[str, asyncio.Semaphore] = {}
        self.requests = 0
        self.tokens = 0
        self.retries = 0

    async def chat(self, model: str, messages: list[dict[str, str]], *, max_tokens: int,
                   grammar: str | None = None) -> tuple[str, bool]:
        """(text, finished normally); connection problems become one clear InputError."""
        extra: dict[str, Any] = {"cache_prompt": False}
        if grammar is not None:
            extra["grammar"] = grammar
        limit = self.limits.setdefault(model, asyncio.Semaphore(self.config.concurrency_per_model))
        # Retries stay inside the model's slot: none of this client's other requests joins the model's
        # batch meanwhile (temperature-0 output depends on the batch), and the retried request is identical.
        async with limit:
            response = await self._create(model=model, messages=messages, temperature=0, max_tokens=max_tokens,
                                          seed=self.config.seed, extra_body=extra)
        self.requests += 1
        self.tokens += response.usage.completion_tokens if response.usage else 0
        choice = response.choices[0]
        return choice.message.content or "", choice.finish_reason == "stop"

    async def _create(self, **request: Any) -> Any:
        """One completion: a dropped connection is retried with backoff, a refused one means no server."""
        from openai import APIConnectionError, APIStatusError, APITimeoutError

        model, config = request["model"], self.config
        for attempt in itertools.count():
            try:
                return await self.client.chat.completions.create(**request)
            except APITimeoutError:
                raise InputError(f"model {model!r} at {self.base_url} gave no answer within timeout_s="
                                 f"{config.timeout_s:g} s (a busy machine: raise AgentConfig.timeout_s)") from None
            except APIConnectionError as error:
                if _refused(error):
                    raise InputError(f"no model server at {self.base_url}: start it with `accord judges serve`") from None
                if attempt == config.connection_retries:
                    raise InputError(f"model server at {self.base_url} dropped the connection {attempt + 1} times in a row "
                                     f"({type(error.__cause__).__name__}: {error.__cause__}); see the server's log") from None
            except APIStatusError as error:
                raise InputError(f"model server at {self.base_url} refused model {model!r}: HTTP {error.status_code}") from None
            self.retries += 1
            await asyncio.sleep(config.retry_backoff_s * 2 ** attempt)

    async def close(self) -> None:
        await self.client.close()


async def _run_one(client: _Client, model: DemoModel, instance: ConflictInstance) -> dict[str, Any]:
    config = client.config
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": f"Question: {instance.question}"}]
    steps: list[dict[str, Any]] = []
    final: dict[str, Any] | None = None
    searches = 0
    for turn_index in range(config.max_turns):
        grammar = FIRST_TURN_GRAMMAR if turn_index == 0 else (
            ANSWER_GRAMMAR if searches >= config.max_searches else TURN_GRAMMAR)
        raw, complete = await client.chat(model.name, messages, max_tokens=config.max_tokens, grammar=grammar)
        turn = parse_turn(raw, complete=complete)
        messages.append({"role": "assistant", "content": raw})
        if turn.answer is not None:
            final = {"reasoning": turn.thought, "text": turn.answer}
            break
        if turn.query is not None:
            searches += 1
            observation = search_result(instance)
            steps.append({"reasoning": turn.thought, "text": None, "tool_call": {
                "name": TOOL_NAME, "arguments": {"query": turn.query}, "result": observation, "success": True}})
            messages.append({"role": "user", "content": f"Observation:\n{observation}\n\n{OBSERVATION_NOTE}"})
        else:
            steps.append({"reasoning": turn.thought, "text": raw.strip() or None, "tool_call": None})
            messages.append({"role": "user", "content": RETRY_NOTE})
    return {
        "id": f"demo:{model.name}:{instance.instance_id}",
        "agent": AGENT_NAME, "backbone": model.backbone, "dataset": DATASET,
        "setting": instance.setting, "split": instance.split, "question": instance.question,
        "reference": list(instance.references), "steps": steps, "final_turn": final, "truncated": final is None,
        "instance": instance.instance_id, "question_id": instance.question_id, "category": instance.category,
        "subcategory": instance.subcategory, "answer_type": instance.answer_type, "distractor": instance.distractor,
        "server_model": model.name, "max_turns": config.max_turns, "max_searches": config.max_searches,
        "max_tokens": config.max_tokens, "seed": config.seed,
    }


@lru_cache(maxsize=1)
def ehq_inference_settings() -> dict[str, Any]:
    """The EHQ package's own answer-elicitation settings (its bundled experiment.json)."""
    from importlib.resources import files

    path = files("ehq").joinpath("resources", "project", "config", "experiment.json")
    return dict(json.loads(path.read_text(encoding="utf-8"))["inference"])


async def _answer_one(client: _Client, model: DemoModel, item: DemoItem) -> dict[str, Any]:
    """The answer, then (EHQ section 3: a second call) the model's 0-100 confidence in it, as raw text: the EHQ stage
    parses it with the package's parser and leaves an unparseable one out of EHQ3 (never imputed)."""
    from ehq.prompts import (
        ANSWER_PROMPT_VERSION,
        CONFIDENCE_PROMPT_VERSION,
        CONFIDENCE_SYSTEM_PROMPT,
        build_answer_prompt,
        build_confidence_prompt,
    )

    prompt = build_answer_prompt(item.ehq_item)
    messages = [{"role": "system", "content": ehq_inference_settings()["system_prompt"]}, {"role": "user", "content": prompt}]
    text, complete = await client.chat(model.name, messages, max_tokens=client.config.max_tokens)
    answer = text.strip() or None
    confidence = None
    if answer is not None:
        asked = [{"role": "system", "content": CONFIDENCE_SYSTEM_PROMPT},
                 {"role": "user", "content": build_confidence_prompt(prompt, answer)}]
        confidence, _ = await client.chat(model.name, asked, max_tokens=client.config.max_tokens)
    return {
        "model": model.backbone, "item_id": item.question_id, "category": item.category,
        "subcategory": item.subcategory, "question": item.question,
        "reference": [a for a in [item.ehq_item.get("correct_answer"), *item.ehq_item.get("acceptable_answers", [])] if a],
        "response": answer, "finish_reason": "stop" if complete else "length",
        "confidence": confidence, "confidence_prompt_version": CONFIDENCE_PROMPT_VERSION,
        "ehq_item": item.ehq_item, "prompt_version": ANSWER_PROMPT_VERSION, "server_model": model.name,
        "max_tokens": client.config.max_tokens, "seed": client.config.seed, "dataset": DATASET,
    }


def _gather(base_url: str, config: AgentConfig, jobs: Callable[[_Client], list[Any]],
            progress: Callable[[int, int], None] | None) -> tuple[list[dict[str, Any]], RunReport]:
    async def main() -> tuple[list[dict[str, Any]], _Client]:
        client = _Client(base_url, config)
        try:
            coroutines = jobs(client)
            done = 0

            async def tracked(coroutine: Any) -> dict[str, Any]:
                nonlocal done
                result = await coroutine
                done += 1
                if progress is not None:
                    progress(done, len(coroutines))
                return result

            return list(await asyncio.gather(*(tracked(c) for c in coroutines))), client
        finally:
            await client.close()

    start = time.perf_counter()
    records, client = asyncio.run(main())
    truncated = sum(1 for r in records if r.get("truncated") or r.get("finish_reason") == "length")
    return records, RunReport(n_records=len(records), n_requests=client.requests, wall_s=time.perf_counter() - start,
                              completion_tokens=client.tokens, truncated=truncated, retries=client.retries)


def _check_models(models: Sequence[DemoModel]) -> None:
    if not models or not all(isinstance(m, DemoModel) for m in models):
        raise InputError(f"models: expected a non-empty sequence of DemoModel, got {models!r}")


def run_agent(instances: Iterable[ConflictInstance], *, base_url: str, models: Sequence[DemoModel] = DEMO_MODELS,
              config: AgentConfig = AgentConfig(),
              progress: Callable[[int, int], None] | None = None) -> tuple[list[dict[str, Any]], RunReport]:
    """Every model on every instance, concurrently; ISE records in (model, instance) order."""
    _check_models(models)
    instances = list(instances)
    return _gather(base_url, config, lambda c: [_run_one(c, m, i) for m in models for i in instances], progress)


def closed_book_answers(items: Iterable[DemoItem], *, base_url: str, models: Sequence[DemoModel] = DEMO_MODELS,
                        config: AgentConfig = AgentConfig(),
                        progress: Callable[[int, int], None] | None = None) -> tuple[list[dict[str, Any]], RunReport]:
    """EHQ-style single-turn answers (EHQ's prompt and system prompt, no tools); responses records."""
    _check_models(models)
    items = list(items)
    return _gather(base_url, config, lambda c: [_answer_one(c, m, i) for m in models for i in items], progress)
