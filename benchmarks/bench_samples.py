"""samples/: streaming ingest throughput and memory, and stratified sampling speed.

Rows:
* ingest of a synthetic ISE-format JSONL (1 GB; 64 MB with --quick) through the
  ``ise`` adapter, trajectories only (issue #3's target), on 1 process (what `accord
  ingest` does by default: ``--workers 1``) and on worker processes; peer: a bare
  ``json.loads`` loop over the same lines (a Python JSONL reader that validates and
  writes nothing);
* the whole default ingest (trajectories + every unit kind; 256 MB, 64 MB with --quick),
  on 1 process and on worker processes;
* the same file re-ingested through the ``canonical`` adapter (accord's own format);
* peak RSS of an ingest subprocess on a file 4x larger (memory flat in file size);
* sampling 10^6 units in 100 strata, unit-level and one-per-trajectory; peer:
  pandas ``groupby(...).sample(n=...)`` (plain stratified SRS) on the same frame;
* blinding 30,000 sampled units (3,000 with --quick) end to end (``blind_study``: scrub,
  independent leak check, tasks/orders/audit/sealed key written); peer: issue #14's
  measurement of the previous scrubber, 30,000 units in 360 s (about 0.25 MB/s).

Wall time is the figure that counts; "per CPU second" counts every thread and process
(the input's sha256 runs on a helper thread), so on an idle machine wall can beat it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from samples.seed import DEFAULT_SEED
from samples.synthetic import ise_records

SEED = DEFAULT_SEED
_RSS_CODE = (
    "import resource, sys; from samples.ingest import ingest; "
    "ingest([sys.argv[1]], sys.argv[2], adapter='ise', kinds=None); "
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
)


def write_synthetic(path: Path, target_bytes: int) -> int:
    """Repeat a pool of seeded ISE records with fresh ids until ``target_bytes`` are written."""
    pool = [json.dumps(r).replace(r["id"], "{ID}", 1) for r in ise_records(500, seed=SEED, steps=(2, 8), words=60)]
    written = 0
    i = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < target_bytes:
            line = pool[i % len(pool)].replace("{ID}", f"syn-{i:09d}", 1) + "\n"
            handle.write(line)
            written += len(line)
            i += 1
    return written


def _row(benchmark: str, accord: str, peer: str, ratio: str, target: str, met: bool | None, notes: str) -> dict:
    return {"benchmark": benchmark, "accord": accord, "peer": peer, "ratio": ratio, "target": target, "met": met,
            "notes": notes}


def _timed_ingest(source: Path, out: Path, **kwargs) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process and of worker processes that ended meanwhile)."""
    from samples.ingest import ingest

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started, cpu = time.perf_counter(), time.process_time()
    ingest([source], out, **kwargs)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(out)
    return wall, cpu + (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)


def _ingest_rows(folder: Path, quick: bool) -> list[dict]:
    size = (64 if quick else 1024) * 1024 * 1024
    source = folder / "synthetic.jsonl"
    written = write_synthetic(source, size)
    mb = written / 1e6
    small = folder / "small.jsonl"
    small_mb = write_synthetic(small, size // 4) / 1e6
    units_source, units_mb = (source, mb) if quick else (small, small_mb)
    ise_s, ise_cpu = _timed_ingest(source, folder / "study", adapter="ise", kinds=None)
    started = time.perf_counter()
    with open(source, "rb") as handle:
        for line in handle:
            json.loads(line)
    peer_s = time.perf_counter() - started
    workers = max(1, min(4, os.cpu_count() or 1))
    parallel_s, parallel_cpu = _timed_ingest(source, folder / "parallel", adapter="ise", kinds=None, workers=workers)
    units_s, units_cpu = _timed_ingest(units_source, folder / "units", adapter="ise")
    units_par_s, units_par_cpu = _timed_ingest(units_source, folder / "units-par", adapter="ise", workers=workers)
    from samples.ingest import ingest

    ingest([source], folder / "study", adapter="ise", kinds=None)  # the canonical file to re-read
    canonical = folder / "study" / "trajectories.jsonl"
    canonical_mb = canonical.stat().st_size / 1e6
    canonical_s, canonical_cpu = _timed_ingest(canonical, folder / "again", adapter="canonical", kinds=None)
    shutil.rmtree(folder / "study")
    load = f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    peer = f"json.loads loop {mb / peer_s:.1f} MB/s"
    units_name = f"{units_mb:,.0f} MB synthetic ISE JSONL -> trajectories + all unit kinds (ise adapter"
    rows = [
        _row(f"ingest {mb:,.0f} MB synthetic ISE JSONL -> trajectories (ise adapter, 1 process)",
             f"{mb / ise_s:.1f} MB/s", peer, f"{peer_s / ise_s:.2f}x", ">= 100 MB/s", mb / ise_s >= 100,
             f"{mb / ise_cpu:.1f} MB/s per CPU second ({load}); what `accord ingest --no-units` does by "
             "default; validates every field (msgspec decodes 256 KB blocks straight into typed structs and "
             "writes them), infers the family, writes canonical JSONL, hashes the input on a helper thread"),
        _row(f"ingest {mb:,.0f} MB synthetic ISE JSONL -> trajectories (ise adapter, {workers} worker processes)",
             f"{mb / parallel_s:.1f} MB/s", peer, f"{peer_s / parallel_s:.2f}x", ">= 100 MB/s", mb / parallel_s >= 100,
             f"{mb / parallel_cpu:.1f} MB/s per CPU second, all processes; same output bytes as one process; "
             "256 KB blocks, at most 2 per worker in flight, so memory stays flat"),
        _row(f"ingest {units_name}, 1 process)", f"{units_mb / units_s:.1f} MB/s", "", "", ">= 100 MB/s",
             units_mb / units_s >= 100,
             f"{units_mb / units_cpu:.1f} MB/s per CPU second; what `accord ingest` does by default: about 3 bytes "
             "of units.jsonl per input byte (every turn rendered, hashed and written)"),
        _row(f"ingest {units_name}, {workers} worker processes)", f"{units_mb / units_par_s:.1f} MB/s", "", "",
             ">= 100 MB/s", units_mb / units_par_s >= 100,
             f"{units_mb / units_par_cpu:.1f} MB/s per CPU second, all processes; same output bytes as one process"),
        _row(f"ingest {canonical_mb:,.0f} MB canonical Trajectory JSONL (canonical adapter)",
             f"{canonical_mb / canonical_s:.1f} MB/s", "", "", ">= 100 MB/s", canonical_mb / canonical_s >= 100,
             f"{canonical_mb / canonical_cpu:.1f} MB/s per CPU second; msgspec decodes into structs mirroring the "
             "models (strict types, no extra keys) and writes them; records it cannot vouch for go through the models"),
    ]
    peaks = []
    for path in (small, source):
        done = subprocess.run([sys.executable, "-c", _RSS_CODE, str(path), str(folder / f"rss-{path.stem}")],
                              capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1])
        peaks.append(int(done.stdout.strip().splitlines()[-1]) / 1024)
        shutil.rmtree(folder / f"rss-{path.stem}")
    growth = peaks[1] - peaks[0]
    rows.append(_row(f"ingest peak RSS, {size // 4 // 2**20} MB vs {size // 2**20} MB input",
                     f"{peaks[0]:.0f} MB -> {peaks[1]:.0f} MB (+{growth:.0f} MB)", "", "",
                     "flat: growth < 10% of the added input", growth < 0.1 * (size - size // 4) / 2**20,
                     "streams in 256 KB blocks; the only per-record state is the set of seen trajectory ids"))
    return rows


def _sampling_rows(quick: bool) -> list[dict]:
    from samples.plans import SamplingPlan
    from samples.sampler import draw

    n = 10**5 if quick else 10**6
    rng = np.random.default_rng(SEED)
    trajectory = np.arange(n) // 10  # 10 units per trajectory; agent and split are trajectory-level
    frame = pd.DataFrame({
        "unit_id": np.char.add("u_", np.char.zfill(rng.permutation(n).astype(str), 8)),
        "trajectory_id": np.char.add("t", trajectory.astype(str)),
        "agent": np.char.add("a", rng.integers(0, 10, n // 10 + 1).astype(str))[trajectory],
        "split": np.char.add("s", rng.integers(0, 10, n // 10 + 1).astype(str))[trajectory],
    })
    rows = []
    for one in (False, True):
        plan = SamplingPlan(name="bench", kinds=["identify_turn"], strata=["agent", "split"], allocation="fixed",
                            n_per_stratum=50, one_per_trajectory=one)
        started = time.perf_counter()
        result = draw(frame, plan, seed=SEED)
        took = time.perf_counter() - started
        assert result.n == 5000 and len(result.counts) == 100
        peer = ""
        ratio = ""
        if not one:
            started = time.perf_counter()
            frame.groupby(["agent", "split"]).sample(n=50, random_state=SEED)
            peer_s = time.perf_counter() - started
            peer, ratio = f"pandas groupby.sample {peer_s:.2f} s", f"{took / peer_s:.2f}x"
        rows.append(_row(f"sample {n:,} units, 100 strata, {'one per trajectory' if one else 'unit-level'}",
                         f"{took:.2f} s", peer, ratio, "< 5 s", took < 5.0,
                         "includes unit-id ordering, exact inclusion probabilities and per-stratum counts"))
    return rows


# One in three units carries an identity, plain or disguised (what blinding has to find).
_IDENTITY_LINES = (
    "As Claude, I cannot browse.", "Served by https://api.openai.com/v1/chat/completions (model gpt-4o-2024-08-06)",
    "Calling claudeSearch with GPT4oBrowser.", "I am Qwen, a large language model created by Alibaba Cloud.",
    "Google translation of the page says 42.", '{"deepseek_api_key": "x", "model": "\\u0043laude-3.5"}',
    "\u0421laude and O\u0440enHands agree.",
)


def _blind_units(n: int) -> list:
    from samples.records import SampledUnit

    rng = np.random.default_rng(SEED)
    units = []
    for i, record in enumerate(ise_records(n, seed=SEED, steps=(4, 8), words=60)):
        turns = [f"{s['text'] or ''} {s['tool_call']['result']}" for s in record["steps"]]
        if rng.random() < 1 / 3:
            turns[int(rng.integers(len(turns)))] += " " + _IDENTITY_LINES[int(rng.integers(len(_IDENTITY_LINES)))]
        text = record["question"] + "\n" + "\n".join(turns)
        identify = i % 2 == 0
        units.append(SampledUnit(unit_id=f"u_{i:08d}", trajectory_id=record["id"],
                                 kind="identify_trajectory" if identify else "correctness", text=text,
                                 turns=turns if identify else None,
                                 strata={"agent": record["agent"], "backbone": record["backbone"]},
                                 stratum=record["agent"], inclusion_prob=0.5))
    return units


def _blind_rows(folder: Path, quick: bool) -> list[dict]:
    from samples.blind import blind_study
    from samples.jsonl import write_jsonl
    from samples.layout import StudyLayout
    from samples.leakcheck import LeakDetector
    from samples.scrub import Scrubber

    n = 3_000 if quick else 30_000
    units = _blind_units(n)
    layout = StudyLayout.of(folder / "blind-study")
    write_jsonl(layout.sample, units)
    texts = [t for u in units for t in [u.text, *(u.turns or [])]]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    started, cpu = time.perf_counter(), time.process_time()
    summary = blind_study(layout.root, annotators=["ann1", "ann2", "ann3"])
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert summary["tasks"] == n and summary["masked_by_category"]
    scrubber, detector = Scrubber(), LeakDetector()
    started = time.process_time()
    scrubbed = [scrubber.scrub(t)[0] for t in texts]
    scrub_s = time.process_time() - started
    started = time.process_time()
    for text in scrubbed:
        detector.find(text)
    check_s = time.process_time() - started
    peer_mb_s = 0.25
    return [_row(f"blind {n:,} sampled units ({mb:,.0f} MB of task text and turns), end to end",
                 f"{took:.1f} s ({mb / took:.1f} MB/s)", "previous scrubber (issue #14): 30,000 units in 360 s, 0.25 MB/s",
                 f"{mb / took / peer_mb_s:.0f}x faster", ">= 2.5 MB/s (10x)", mb / took >= 10 * peer_mb_s,
                 f"{mb / cpu:.1f} MB/s per CPU second; blind_study: scrub, independent leak check, tasks/orders/audit/"
                 f"sealed key written; per CPU second, scrub alone "
                 f"{mb / scrub_s:.1f} MB/s (pyahocorasick, plus a cheap pass where a reader could read through "
                 f"separators), leak check alone {mb / check_s:.1f} MB/s; "
                 f"a third of the units carry an identity, plain or disguised; load average {os.getloadavg()[0]:.1f} "
                 f"on {os.cpu_count()} cores")]


def run(quick: bool = False) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="accord-bench-samples-") as folder:
        rows = _ingest_rows(Path(folder), quick) + _blind_rows(Path(folder), quick)
    return rows + _sampling_rows(quick)


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(row)
