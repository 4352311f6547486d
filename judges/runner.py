"""The judge runner: units x judges x samples -> the labels table, cached and resumable.

Order of durability per call: the response goes into the SQLite cache (committed)
before its label is appended to the label log, and the labels table is rebuilt from
the log when the run ends (``judges.tables``). A run killed at any point therefore
resumes without paying again for a call that succeeded: finished labels are skipped
(same fingerprint), and a response whose label was not yet logged is a cache hit.
Failed calls are never cached; after the retries they become unscored rows
(``call_failed: ...``) that the next run tries again. A run holds the study's judges
lock throughout, so a second run on the same study is refused with the holder's pid.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack, asynccontextmanager, closing
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from judges.cache import RequestCache, RequestKeyer, request_key
from judges.engines import DEFAULT_ENGINE, get_engine, register_engine
from judges.lock import exclusive
from judges.parsers import parse_output
from judges.prices import PriceTable
from judges.providers.base import CONTEXT_EXCEEDED, CallError, Completion, Provider, get_provider, make_provider
from judges.spec import JudgeSpec
from judges.tables import LabelStore, RunLog, current_labels
from samples import DEFAULT_SEED, InputError, JudgeLabel, LabelKey, StudyLayout, Unit, judge_message, sha256_hex

# Rough English average for token estimates in --dry-run and token-rate limiting; the
# provider's own counts replace it for accounting.
CHARS_PER_TOKEN = 4.0


def accord_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("accord")
    except PackageNotFoundError:
        return "0+unknown"


def unit_set_hash(units: Sequence[Unit]) -> str:
    """Identity of the units a judge sees: ids plus a hash of each exact message (samples.kinds)."""
    return sha256_hex(sorted([u.unit_id, hashlib.sha256(judge_message(u).encode("utf-8")).hexdigest()] for u in units))


@dataclass(frozen=True, kw_only=True)
class StudyPaths:
    """Where a run reads and writes: the labels table, its label log, the run log, the
    request cache, and the lock that lets one run at a time write them."""

    labels: Path
    label_log: Path
    runs: Path
    cache: Path
    lock: Path

    @classmethod
    def in_dir(cls, judges_dir: str | Path, *, cache: str | Path | None = None) -> StudyPaths:
        """The files of a judges folder, named as in ``StudyLayout``; the lock is
        ``.locks/<folder name>.lock`` beside it, so ``STUDY/judges`` gets exactly the
        layout's judge paths and lock (``STUDY/.locks/judges.lock``)."""
        judges_dir = Path(judges_dir).absolute()
        names = StudyLayout.of(judges_dir.parent)
        return cls(labels=judges_dir / names.judge_labels.name, label_log=judges_dir / names.judge_label_log.name,
                   runs=judges_dir / names.judge_runs.name,
                   cache=Path(cache) if cache else judges_dir / names.judge_cache.name,
                   lock=names.locks / f"{judges_dir.name}.lock")


@dataclass(frozen=True, kw_only=True)
class JudgeStats:
    """What one run did for one judge. Costs cover calls made in this run only."""

    judge: str
    fingerprint: str
    units: int
    expected_labels: int
    already_done: int
    cache_hits: int
    calls: int
    retries: int
    failed: int
    """Calls that failed (``call_failed``: the next run tries them again); a unit past the context is unscored."""
    ok: int
    unscored: int
    unscored_reasons: dict[str, int]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    cost_reason: str | None
    estimated_input_tokens: int
    estimated_output_tokens: int | None
    estimated_output_reason: str | None
    context_tokens: int | None = None
    """Tokens one request may fill at the judge's server (a local slot), None when unknown."""
    over_context: int = 0
    """Dry run: calls whose estimated prompt plus output cap exceed ``context_tokens`` (they would be unscored)."""

    @property
    def context_exceeded(self) -> int:
        """Labels of this run unscored because the unit did not fit the server's context."""
        return self.unscored_reasons.get(CONTEXT_EXCEEDED, 0)


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    run_id: str
    dry_run: bool
    judges: tuple[JudgeStats, ...]
    labels_path: str
    seconds: float

    @property
    def calls(self) -> int:
        return sum(j.calls for j in self.judges)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(kw_only=True)
class _Task:
    spec: JudgeSpec
    unit: Unit
    sample_index: int
    request: dict[str, Any]
    key: str
    est_input: int
    est_output: int
    cached: bool = False

    @property
    def est_tokens(self) -> int:
        return self.est_input + self.est_output


@dataclass(kw_only=True)
class _Tally:
    cache_hits: int = 0
    calls: int = 0
    retries: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasons: Counter = field(default_factory=Counter)
    ok: int = 0


class _Bucket:
    """Token bucket refilled continuously at ``per_minute``; may go into debt for one big request."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.stamp = time.monotonic()
        self.lock = asyncio.Lock()

    async def take(self, amount: float) -> None:
        async with self.lock:
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
                self.stamp = now
                need = min(amount, self.capacity)
                if self.level >= need:
                    self.level -= amount
                    return
                await asyncio.sleep((need - self.level) / self.rate)


class _Limiter:
    """Bounded concurrency plus request- and token-per-minute buckets for one endpoint."""

    def __init__(self, concurrency: int, rpm: float | None, tpm: float | None) -> None:
        self.semaphore = asyncio.Semaphore(concurrency)
        self.requests = _Bucket(rpm) if rpm else None
        self.tokens = _Bucket(tpm) if tpm else None

    @asynccontextmanager
    async def slot(self, tokens: int):
        async with self.semaphore:
            if self.requests:
                await self.requests.take(1)
            if self.tokens:
                await self.tokens.take(tokens)
            yield


def _output_cap(spec: JudgeSpec) -> int | None:
    return spec.params.get("max_tokens") or spec.params.get("max_completion_tokens")


def _label(task: _Task, fingerprint: str, completion: Completion | None, error: str | None,
           *, cache_hit: bool, latency: float | None) -> JudgeLabel:
    base = dict(unit_id=task.unit.unit_id, judge=task.spec.name, sample_index=task.sample_index,
                fingerprint=fingerprint, cache_hit=cache_hit, latency_s=latency)
    if completion is None:  # ``error``: "reason: detail" (CallError.reason)
        return JudgeLabel(**base, label=None, parse_status="unscored", unscored_reason=error)
    outcome = parse_output(task.spec.output, completion.text, mode=task.spec.parse_mode, truncated=completion.truncated)
    return JudgeLabel(
        **base, label=outcome.label, label_strict=outcome.strict.label, label_lenient=outcome.lenient.label,
        first_turn=outcome.first_turn, parse_status=outcome.status, unscored_reason=outcome.reason,
        raw_output=completion.text, input_tokens=completion.input_tokens, output_tokens=completion.output_tokens,
    )


def build_tasks(spec: JudgeSpec, provider: Provider, units: Sequence[Unit], *, fingerprint: str | None = None,
                existing: Mapping[LabelKey, JudgeLabel] | None = None) -> tuple[list[_Task], int]:
    """One task per (unit, sample) still to label; rows already labelled under ``fingerprint`` are skipped.

    A row counts as done unless its call failed: those are tried again.
    """
    tasks: list[_Task] = []
    done = 0
    system = spec.prompt.system if spec.prompt else None
    keyers: dict[int, RequestKeyer] = {}
    for unit in units:
        for k in range(spec.samples):
            row = (existing or {}).get((unit.unit_id, spec.name, k))
            if row is not None and row.fingerprint == fingerprint and not (row.unscored_reason or "").startswith("call_failed"):
                done += 1
                continue
            user = judge_message(unit, spec.prompt.user if spec.prompt else None)
            request = provider.build_request(model=spec.model, system=system, user=user, params=spec.params,
                                             output_kind=spec.output, sample_index=k, unit=unit)
            if provider.cacheable:  # cacheable requests depend on the unit only through its text (Provider contract)
                if k not in keyers:
                    keyers[k] = RequestKeyer(provider.build_request(
                        model=spec.model, system=system, user=RequestKeyer.placeholder, params=spec.params,
                        output_kind=spec.output, sample_index=k, unit=unit))
                key = keyers[k].key(user)
            else:
                key = request_key(request)
            tasks.append(_Task(spec=spec, unit=unit, sample_index=k, request=request, key=key,
                               est_input=int(len((system or "") + user) / CHARS_PER_TOKEN),
                               est_output=_output_cap(spec) or 0))
    return tasks, done


def run_judges(
    units: Sequence[Unit],
    judges: Sequence[JudgeSpec],
    paths: StudyPaths,
    *,
    prices: PriceTable | None = None,
    dry_run: bool = False,
    progress: bool = False,
    seed: int = DEFAULT_SEED,
    on_label: Callable[[JudgeLabel], None] | None = None,
) -> RunSummary:
    """Label every unit of each judge's kinds, ``samples`` times; resume what is done."""
    names = [spec.name for spec in judges]
    if len(set(names)) != len(names):
        raise InputError(f"judge names must be unique in one run; repeated: {sorted({n for n in names if names.count(n) > 1})}")
    repeated = sorted(i for i, n in Counter(u.unit_id for u in units).items() if n > 1)
    if repeated:
        raise InputError(f"unit_id must be unique; repeated: {repeated[:10]}")
    started = time.monotonic()
    prices = prices or PriceTable.load()
    version = accord_version()
    providers = {spec.name: make_provider(spec.provider, spec.connection) for spec in judges}
    if not dry_run:  # an engine that cannot run (not installed, a bad option) is refused before anything is written
        for name in sorted({spec.engine for spec in judges}):
            get_engine(name).check([spec for spec in judges if spec.engine == name])
    with ExitStack() as stack:
        cache = stack.enter_context(closing(RequestCache(paths.cache)))  # a bad cache is refused before the lock
        # (the lock file stays: unlinking a flock file lets two runs lock two different files)
        if not dry_run:  # a dry run writes nothing, so it needs no lock and may watch a running one
            stack.enter_context(exclusive(paths.lock, what=f"the judge labels in {paths.labels.parent}"))
        summary = _run_locked(units, judges, paths, providers, cache, prices=prices, dry_run=dry_run,
                              progress=progress, seed=seed, on_label=on_label, version=version)
    return replace(summary, seconds=time.monotonic() - started)


def _run_locked(units: Sequence[Unit], judges: Sequence[JudgeSpec], paths: StudyPaths, providers: dict[str, Provider],
                cache: RequestCache, *, prices: PriceTable, dry_run: bool, progress: bool, seed: int,
                on_label: Callable[[JudgeLabel], None] | None, version: str) -> RunSummary:
    """``run_judges`` once its checks pass and, unless a dry run, the study's judges lock is held."""
    started = time.monotonic()
    with ExitStack() as stack:  # on any error or Ctrl-C: the table is rebuilt from every label logged so far
        store = None if dry_run else stack.enter_context(closing(LabelStore(paths.labels, paths.label_log)))
        existing = dict(store.table) if store else current_labels(paths.labels, paths.label_log)
        run_id = uuid.uuid4().hex[:16]
        plan: list[tuple[JudgeSpec, str, list[Unit], list[_Task], int]] = []
        fingerprint_parts: dict[str, dict[str, Any]] = {}
        for spec in judges:
            mine = [u for u in units if u.kind in spec.unit_kinds]
            units_hash = unit_set_hash(mine)
            fingerprint = spec.fingerprint(units_hash, version)
            fingerprint_parts[spec.name] = {"fingerprint": fingerprint, **spec.fingerprint_parts(units_hash, version)}
            tasks, done = build_tasks(spec, providers[spec.name], mine, fingerprint=fingerprint, existing=existing)
            plan.append((spec, fingerprint, mine, tasks, done))

        cached: dict[str, dict[str, Any]] = cache.get_many(
            t.key for _, _, _, tasks, _ in plan for t in tasks if providers[t.spec.name].cacheable
        )
        tallies = {spec.name: _Tally() for spec in judges}
        log = None if dry_run else stack.enter_context(closing(RunLog(paths.runs)))
        if log is not None:
            log.event("start", run_id=run_id, time=time.time(), accord_version=version, labels=str(paths.labels),
                      cache=str(paths.cache), units=len(units), existing_rows=len(existing),
                      judges=fingerprint_parts, pid=os.getpid(),
                      engines={spec.name: get_engine(spec.engine).describe(spec) for spec in judges})
        pending: list[tuple[_Task, str]] = []
        hit_labels: list[JudgeLabel] = []
        for spec, fingerprint, _, tasks, _ in plan:
            tally = tallies[spec.name]
            for task in tasks:
                raw = cached.get(task.key)
                if raw is None:
                    pending.append((task, fingerprint))
                    continue
                tally.cache_hits += 1
                task.cached = True
                if not dry_run:
                    label = _label(task, fingerprint, providers[spec.name].completion_from_raw(raw), None,
                                   cache_hit=True, latency=0.0)
                    hit_labels.append(label)
        if store is not None:
            store.write_many(hit_labels)
            for label in hit_labels:
                _count(tallies[label.judge], label)
                if on_label:
                    on_label(label)
            run = RunContext(providers=providers, cache=cache, store=store, log=log, tallies=tallies, run_id=run_id,
                             seed=seed, on_label=on_label, bar=_progress(len(pending)) if progress and pending else None)
            try:
                if run.bar is not None:
                    run.bar[0].start()
                by_engine: dict[str, list[tuple[_Task, str]]] = {}
                for task, fp in pending:
                    by_engine.setdefault(task.spec.engine, []).append((task, fp))
                for name, group in sorted(by_engine.items()):
                    get_engine(name).call_all(group, run)
                if "local" not in by_engine:  # the local engine closes the clients in its own event loop
                    asyncio.run(_close(providers.values()))
            finally:
                if run.bar is not None:
                    run.bar[0].stop()
            store.close()  # the table is rebuilt before the run's end is logged

        stats = tuple(_stats(spec, fp, mine, tasks, done, tallies[spec.name], prices, dry_run,
                             context=getattr(providers[spec.name], "context_tokens", None))
                      for spec, fp, mine, tasks, done in plan)
        summary = RunSummary(run_id=run_id, dry_run=dry_run, judges=stats, labels_path=str(paths.labels),
                             seconds=time.monotonic() - started)
        if log is not None:
            log.event("end", run_id=run_id, time=time.time(), seconds=summary.seconds,
                      judges=[asdict(s) for s in stats])
    return summary


def _count(tally: _Tally, label: JudgeLabel) -> None:
    if label.parse_status == "ok":
        tally.ok += 1
    else:
        tally.reasons[(label.unscored_reason or "").split(":")[0]] += 1


def _stats(spec: JudgeSpec, fingerprint: str, mine: list[Unit], tasks: list[_Task], done: int, tally: _Tally,
           prices: PriceTable, dry_run: bool, *, context: int | None = None) -> JudgeStats:
    if dry_run:
        to_call = [t for t in tasks if not t.cached]
        over = 0 if context is None else sum(t.est_tokens > context for t in to_call)
        promptless = not get_provider(spec.provider).prompt  # a rule classifier: no tokens in or out
        cap = _output_cap(spec)
        est_in = 0 if promptless else sum(t.est_input for t in to_call)
        est_out = 0 if promptless else (cap * len(to_call) if cap else None)
        out_reason = None if est_out is not None else "no max_tokens cap (ISE policy): output length unknown"
        cost = prices.cost(spec.provider, spec.model, est_in, est_out)
        return JudgeStats(
            judge=spec.name, fingerprint=fingerprint, units=len(mine), expected_labels=len(mine) * spec.samples,
            already_done=done, cache_hits=tally.cache_hits, calls=len(to_call), retries=0, failed=0,
            ok=0, unscored=0, unscored_reasons={}, input_tokens=0, output_tokens=0, cost_usd=cost.usd,
            cost_reason=out_reason if cost.reason == "token counts not reported" else cost.reason,
            estimated_input_tokens=est_in, estimated_output_tokens=est_out, estimated_output_reason=out_reason,
            context_tokens=context, over_context=over,
        )
    cost = prices.cost(spec.provider, spec.model, tally.input_tokens, tally.output_tokens)
    return JudgeStats(
        judge=spec.name, fingerprint=fingerprint, units=len(mine), expected_labels=len(mine) * spec.samples,
        already_done=done, cache_hits=tally.cache_hits, calls=tally.calls, retries=tally.retries, failed=tally.failed,
        ok=tally.ok, unscored=sum(tally.reasons.values()), unscored_reasons=dict(sorted(tally.reasons.items())),
        input_tokens=tally.input_tokens, output_tokens=tally.output_tokens, cost_usd=cost.usd, cost_reason=cost.reason,
        estimated_input_tokens=0, estimated_output_tokens=None, estimated_output_reason="not a dry run",
        context_tokens=context,
    )


@dataclass(kw_only=True)
class RunContext:
    """What an engine needs from the run: the providers, and ``record``, the one way a finished
    call becomes a label (response cached, committed, before its label is logged)."""

    providers: dict[str, Provider]
    cache: RequestCache
    store: LabelStore
    log: RunLog
    tallies: dict[str, _Tally]
    run_id: str
    seed: int
    on_label: Callable[[JudgeLabel], None] | None
    bar: Any = None

    def record(self, task: _Task, fingerprint: str, completion: Completion | None, error: str | None,
               latency: float | None) -> JudgeLabel:
        provider = self.providers[task.spec.name]
        if completion is not None and provider.cacheable:
            self.cache.put(task.key, task.request, completion.raw)
        label = _label(task, fingerprint, completion, error, cache_hit=False, latency=latency)
        self.store.write(label)
        _count(self.tallies[task.spec.name], label)
        if self.on_label:
            self.on_label(label)
        if self.bar is not None:
            self.bar[0].advance(self.bar[1])
        return label


class LocalEngine:
    """The runner's own asyncio loop: one limiter per endpoint, retries with backoff."""

    name = DEFAULT_ENGINE
    remote = False
    flags: Mapping[str, str] = MappingProxyType({})

    def options(self, where: str, table: Mapping[str, Any]) -> None:
        raise InputError(f"{where}: the local engine takes no options table")

    def check(self, judges: Sequence[JudgeSpec]) -> None:
        return None

    def describe(self, spec: JudgeSpec) -> dict[str, Any]:
        return {"engine": self.name}

    def call_all(self, pending: Sequence[tuple[_Task, str]], run: RunContext) -> None:
        asyncio.run(_call_all(pending, run))


async def _call_all(pending: Sequence[tuple[_Task, str]], run: RunContext) -> None:
    providers, log, tallies, run_id = run.providers, run.log, run.tallies, run.run_id
    rng = random.Random(run.seed)
    # One limiter per endpoint, shared by the judges that call it; the strictest judge's bounds win.
    bounds: dict[tuple, list[JudgeSpec]] = {}
    for spec in {task.spec.name: task.spec for task, _ in pending}.values():
        bounds.setdefault(_endpoint(spec), []).append(spec)
    limiters = {
        endpoint: _Limiter(
            min(s.concurrency for s in specs),
            min((s.requests_per_minute for s in specs if s.requests_per_minute), default=None),
            min((s.tokens_per_minute for s in specs if s.tokens_per_minute), default=None),
        )
        for endpoint, specs in bounds.items()
    }

    async def one(task: _Task, fingerprint: str) -> None:
        spec = task.spec
        completion, error, latency = await _call_with_retries(task, providers[spec.name], limiters[_endpoint(spec)],
                                                              log, tallies[spec.name], run_id, rng)
        run.record(task, fingerprint, completion, error, latency)

    try:
        await asyncio.gather(*(one(task, fp) for task, fp in pending))
    finally:
        await _close(providers.values())


async def _close(providers: Iterable[Provider]) -> None:
    for provider in providers:
        await provider.aclose()


def _endpoint(spec: JudgeSpec) -> tuple[str, str | None, str, str | None]:
    """What one concurrency/rate limiter guards: the provider's answer (``ProviderKind.concurrency_key``)."""
    return get_provider(spec.provider).concurrency_key(spec)


def _progress(total: int):
    """A transient bar on stderr, drawn only on a terminal: elsewhere (a pipe, `accord run --quiet` in a script)
    it would leave a blank line among the verdict lines on stdout."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    console = Console(stderr=True)
    bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=console, transient=True, disable=not console.is_terminal)
    return bar, bar.add_task("judging", total=total)


async def _call_with_retries(task: _Task, provider: Provider, limiter: _Limiter, log: RunLog, tally: _Tally,
                             run_id: str, rng: random.Random) -> tuple[Completion | None, str | None, float | None]:
    spec = task.spec
    error: CallError | None = None
    for attempt in range(spec.max_retries + 1):
        async with limiter.slot(task.est_tokens):
            started = time.monotonic()
            try:
                completion = await asyncio.wait_for(provider.complete(task.request), spec.connection.timeout_s)
            except TimeoutError:
                error = CallError(f"timeout after {spec.connection.timeout_s:g} s", retryable=True)
            except CallError as failure:
                error = failure
            else:
                tally.calls += 1
                tally.input_tokens += completion.input_tokens or 0
                tally.output_tokens += completion.output_tokens or 0
                return completion, None, time.monotonic() - started
        tally.calls += 1
        context = dict(run_id=run_id, judge=spec.name, unit_id=task.unit.unit_id, sample_index=task.sample_index,
                       key=task.key, attempt=attempt + 1, error=error.detail, status=error.status)
        if not error.retryable or attempt == spec.max_retries:
            break
        if error.retry_after is not None:
            # The server's wish, but never past the run's own bound: a "Retry-After: 86400"
            # from a proxy must not park the run for a day.
            wait = min(error.retry_after, spec.max_backoff_s)
        else:
            cap = min(spec.max_backoff_s, spec.backoff_s * 2 ** attempt)
            wait = cap / 2 + rng.uniform(0, cap / 2)  # exponential backoff, "equal jitter"
        tally.retries += 1
        log.event("retry", wait_s=wait, retry_after=error.retry_after, **context)
        await asyncio.sleep(wait)
    tally.failed += error.reason != CONTEXT_EXCEEDED  # a unit past the context is unscored, not a failed call
    log.event("call_failed", retryable=error.retryable, reason=error.reason, **context)
    return None, f"{error.reason}: {error.detail}", None


register_engine(LocalEngine())
