"""Judges benchmarks: warm-cache rerun at 10,000 units; concurrent runner vs a sequential loop.

1. Warm cache: 10,000 escalate units whose responses are already cached (imported
   through the OpenAI batch-result path), relabelled into a fresh labels table with
   the endpoint pointed at a closed port, so any call would show as a failure.
   Target: 0 calls, under 2 s.
2. Concurrency: the same short requests to the same local llama-server (SmolLM2, a
   one-line judge prompt, a grammar-constrained YES/NO answer, no prompt cache), once through the
   runner with 8 concurrent calls and once as a plain sequential loop of official-SDK
   calls (the peer). Short prompts keep the comparison about request scheduling: with
   the ~500-token ISE prompts a 1-thread CPU server spends its time in prompt
   processing, which concurrent slots cannot share. Target: the runner at least 3x faster.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from samples.records import Unit

WARM_UNITS = 10_000
CONCURRENT_UNITS = 24
CONCURRENCY = 8


def _units(n: int, tag: str) -> list[Unit]:
    return [
        Unit(unit_id=f"u_{tag}{i:018d}"[:22], trajectory_id=f"bench-{tag}-{i}", kind="escalate_final",
             text=f"Final answer {i}: the bridge opened in {1900 + i % 120}; one source says {1901 + i % 120}.")
        for i in range(n)
    ]


def _warm_cache(quick: bool) -> dict:
    from judges.batch import import_batch_results, write_batch
    from judges.runner import StudyPaths, run_judges
    from judges.spec import build_judge

    n = 1_000 if quick else WARM_UNITS
    units = _units(n, "w")
    with tempfile.TemporaryDirectory(prefix="accord-bench-judges-") as tmp:
        tmp = Path(tmp)
        judge = build_judge({"prompt": "ise-escalate", "provider": "openai", "model": "bench-m", "name": "bench",
                             "base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "timeout_s": 1})
        cache = tmp / "cache.sqlite"
        (written,) = write_batch(units, [judge], tmp / "batch", cache_path=cache)
        results = tmp / "results.jsonl"
        with results.open("w") as out:
            for line in open(written["batch_file"]):
                custom_id = json.loads(line)["custom_id"]
                body = {"id": "c", "object": "chat.completion", "created": 0, "model": "bench-m",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "NO"}, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 600, "completion_tokens": 1, "total_tokens": 601}}
                out.write(json.dumps({"id": "b", "custom_id": custom_id, "error": None,
                                      "response": {"status_code": 200, "request_id": "r", "body": body}}) + "\n")
        import_batch_results(results, written["requests_file"], cache_path=cache)
        started = time.perf_counter()
        summary = run_judges(units, [judge], StudyPaths.in_dir(tmp / "study", cache=cache))
        seconds = time.perf_counter() - started
    stats = summary.judges[0]
    ok = stats.calls == 0 and stats.cache_hits == n
    return {
        "benchmark": f"judges: warm-cache rerun, {n:,} units",
        "accord": f"{seconds:.2f} s, {stats.calls} calls",
        "peer": "", "ratio": "",
        "target": "0 calls, < 2 s" + (" (full run: 10,000 units)" if quick else ""),
        "met": bool(ok and seconds < 2.0) if not quick else None,
        "notes": f"{stats.cache_hits} cache hits into a fresh labels table; endpoint a closed port, so a call would fail",
    }


def _concurrency(quick: bool) -> dict:
    import openai

    from judges.local_server import LlamaServer
    from judges.runner import StudyPaths, run_judges
    from judges.spec import build_judge

    n = 8 if quick else CONCURRENT_UNITS
    with LlamaServer(name="llama-server-bench", parallel=CONCURRENCY, ctx_size=CONCURRENCY * 1024, threads=1) as server, \
            tempfile.TemporaryDirectory(prefix="accord-bench-judges-") as tmp:
        prompt = Path(tmp) / "bench-short.toml"
        prompt.write_text('name = "bench-short"\nversion = "1"\noutput = "yes_no"\nunit_kinds = ["escalate_final"]\n'
                          'source = "accord benchmark"\nsystem = "Does the answer mention two different years? Say why."\n')
        config = {"prompt": str(prompt), "provider": "local", "model": "smollm2", "base_url": server.base_url,
                  "params": {"temperature": 0.0, "max_tokens": 2}, "concurrency": CONCURRENCY,
                  "timeout_s": 600}
        judge = build_judge(config)
        warm = _units(2, "x")
        run_judges(warm, [judge], StudyPaths.in_dir(Path(tmp) / "warm"))  # load weights, first-call costs

        from judges.providers.base import make_provider
        from judges.runner import build_tasks

        seq_units, conc_units = _units(n, "s"), _units(n, "c")
        provider = make_provider("local", judge.connection)
        bodies = [task.request["body"] for task in build_tasks(judge, provider, seq_units)[0]]
        client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="none", max_retries=0, timeout=300,
                               default_headers={"Connection": "close"})  # as the local provider does
        started = time.perf_counter()
        for body in bodies:
            client.chat.completions.create(model=body["model"], messages=body["messages"], temperature=0.0, max_tokens=2,
                                           extra_body={"cache_prompt": body["cache_prompt"], "grammar": body["grammar"]})
        sequential = time.perf_counter() - started
        client.close()

        started = time.perf_counter()
        summary = run_judges(conc_units, [judge], StudyPaths.in_dir(Path(tmp) / "study"))
        concurrent = time.perf_counter() - started
    ratio = sequential / concurrent
    stats = summary.judges[0]
    return {
        "benchmark": f"judges: runner ({CONCURRENCY} concurrent) vs sequential loop, {n} calls to local llama-server",
        "accord": f"{concurrent:.2f} s ({n / concurrent:.1f} calls/s)",
        "peer": f"sequential openai SDK loop {sequential:.2f} s ({n / sequential:.1f} calls/s)",
        "ratio": f"{ratio:.1f}x",
        "target": ">= 3x",
        "met": ratio >= 3.0 and stats.calls == n and stats.failed == 0,
        "notes": f"SmolLM2-135M, one-line prompt, grammar YES/NO, cache_prompt false, {CONCURRENCY} server slots, "
                 f"1 thread per model; the runner's time includes its cache writes and labels file. A CPU server "
                 f"is compute-bound in prompt processing, which parallel slots do not share, so the ratio measures "
                 f"how much latency the runner overlaps, not a faster model",
    }


def run(quick: bool = False) -> list[dict]:
    return [_warm_cache(quick), _concurrency(quick)]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
