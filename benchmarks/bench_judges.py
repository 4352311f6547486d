"""Judges benchmarks: warm-cache rerun at 10,000 units; the concurrent runner vs a sequential loop.

1. Warm cache: 10,000 escalate units whose responses are already cached (imported
   through the OpenAI batch-result path), relabelled into a fresh labels table with
   the endpoint pointed at a closed port, so any call would show as a failure.
   Target: 0 calls, under 2 s.
2. Runner vs a plain sequential loop of official-SDK calls (the peer), the same requests
   to the same server, side by side. Target for each: the runner at least 3x faster.
   - a stub server in its own process answering at once: the runner's own cost per call
     (cache commit, labels line, asyncio, one TCP connection per call as for local servers);
   - the same stub answering after 100 ms, like a hosted API: latency the runner overlaps;
   - llama-server (both local models behind one router, the shipped server settings),
     prompt-bound: SmolLM2 and Gemma judges with a one-line prompt, a grammar-constrained
     YES/NO, max_tokens 2;
   - llama-server in the ISE paper's judge configuration (App. A.3: the verbatim Escalate
     prompt, temperature 1, no max_tokens cap, free text since GPT-5 was not constrained),
     a fixed seed per request, SmolLM2 and Gemma judges run together. Both arms' outputs
     and token counts are compared, and the server's CPU seconds per arm show the work done.

Why the llama-server rows stay near 1-2x on this machine (measured while writing this,
CPU seconds per generated token of the model process, 1 thread): SmolLM2 14.5 ms at one
sequence, 13.6 ms with 4 sequences batched; Gemma 23 ms vs 19.5 ms. Prompt processing is
~7 ms per token either way. Both phases are compute-bound on a 2-core CPU (Q4_1/Q8_0
weights have no batched kernel on AVX2 that reuses them), so continuous batching saves
almost no work; what a concurrent runner can gain is the second core, by running both
models' processes at once, and only as far as their work is balanced and the core is idle
(other work on a shared machine takes it). Each llama-server row reports the server's CPU
seconds per model process in both arms, and the ratio two idle cores would allow.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from samples.records import Unit
from samples.seed import DEFAULT_SEED

WARM_UNITS = 10_000
STUB_CALLS = 400
STUB_LATENCY_S = 0.1
PROMPT_BOUND_UNITS = 12
ROUNDS = 3
# Gemma 270M (a base model) never stops by itself: each of its paper-config calls decodes
# a full slot of context, about 75 s here, so this row is kept small.
PAPER_UNITS = 2
SEED = DEFAULT_SEED
TARGET = 3.0
# ISE App. A.3: temperature 1, no max_tokens cap; the local provider constrains output
# unless told not to, and the paper's judges were not constrained.
PAPER_PARAMS = {"temperature": 1.0, "seed": SEED, "constrain": False}


def _units(n: int, tag: str) -> list[Unit]:
    return [
        Unit(unit_id=f"u_{tag}{i:0{20 - len(tag)}d}", trajectory_id=f"bench-{tag}-{i}", kind="escalate_final",
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
                out.write(json.dumps({"id": "b", "custom_id": custom_id, "error": None,
                                      "response": {"status_code": 200, "request_id": "r", "body": _stub_body()}}) + "\n")
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


# ---- the two arms: the same requests through the runner and through a sequential SDK loop

def _sdk_kwargs(body: dict) -> dict:
    """chat.completions.create arguments for a wire body; llama.cpp fields go in extra_body."""
    named = ("model", "messages", "temperature", "top_p", "seed", "max_tokens")
    extra = {k: v for k, v in body.items() if k not in named}
    return {**{k: body[k] for k in named if k in body}, **({"extra_body": extra} if extra else {})}


def _sequential(base_url: str, bodies: list[dict]) -> tuple[float, list[dict]]:
    """The peer: one official-SDK call after another, as a plain script would judge."""
    import openai

    # Connection: close as the local provider sends it (llama-server's router closes
    # connections after each reply), so both arms open one connection per call.
    client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=3600,
                           default_headers={"Connection": "close"})
    started = time.perf_counter()
    replies = [client.chat.completions.create(**_sdk_kwargs(body)).model_dump(mode="json") for body in bodies]
    seconds = time.perf_counter() - started
    client.close()
    return seconds, replies


def _requests(judges: list, units: list[Unit]) -> list[tuple[str, str, dict]]:
    """(unit_id, judge, wire body) of every call the runner will make, in its order."""
    from judges.providers.base import make_provider
    from judges.runner import build_tasks

    out = []
    for judge in judges:
        provider = make_provider(judge.provider, judge.connection)
        out += [(t.unit.unit_id, judge.name, t.request["body"]) for t in build_tasks(judge, provider, units)[0]]
    return out


def _side_by_side(base_url: str, judges: list, units: list[Unit], workdir: Path, cpu=None) -> dict:
    """Sequential loop, then the runner, on the same requests; outputs and work of both arms."""
    from judges.runner import StudyPaths, run_judges
    from judges.tables import read_labels

    requests = _requests(judges, units)
    load_before = os.getloadavg()[0]
    cpu0 = cpu() if cpu else None
    seq_s, replies = _sequential(base_url.rstrip("/") + "/v1", [body for *_, body in requests])
    cpu1 = cpu() if cpu else None
    started = time.perf_counter()
    summary = run_judges(units, judges, StudyPaths.in_dir(workdir))
    conc_s = time.perf_counter() - started
    cpu2 = cpu() if cpu else None
    table = read_labels(workdir / "labels.jsonl")
    seq = {(u, j): r for (u, j, _), r in zip(requests, replies)}
    conc = {(u, j): table[(u, j, 0)] for u, j, _ in requests}
    return {
        "calls": len(requests), "sequential_s": seq_s, "concurrent_s": conc_s,
        "failed": sum(s.failed for s in summary.judges), "runner_calls": summary.calls,
        "seq_tokens": sum(r["usage"]["completion_tokens"] for r in seq.values()),
        "conc_tokens": sum(label.output_tokens or 0 for label in conc.values()),
        "identical": sum(seq[k]["choices"][0]["message"]["content"] == conc[k].raw_output for k in seq),
        "seq_cpu": _delta(cpu0, cpu1), "conc_cpu": _delta(cpu1, cpu2),
        "per_judge": {j.name: (sum(seq[k]["usage"]["completion_tokens"] for k in seq if k[1] == j.name),
                               sum(conc[k].output_tokens or 0 for k in conc if k[1] == j.name)) for j in judges},
        "load": (load_before, os.getloadavg()[0]),
    }


def _delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float] | None:
    return None if before is None else {k: after[k] - before.get(k, 0.0) for k in after}


def _server_work(m: dict) -> str:
    """Server CPU seconds per process in both arms, and the ratio two idle cores would allow.

    The concurrent arm cannot end before its busiest single-threaded model process has
    done its CPU work, so sequential CPU / that process's CPU bounds the ratio.
    """
    seq, conc = m["seq_cpu"], m["conc_cpu"]
    per = ", ".join(f"{k} {seq.get(k, 0.0):.1f} vs {conc[k]:.1f}" for k in sorted(conc))
    bound = sum(seq.values()) / max(v for k, v in conc.items() if k != "router")
    return (f"server CPU s sequential vs runner: {per}; with 2 idle cores the ratio could reach at "
            f"most {bound:.2f}x (sequential CPU / the busiest model process's CPU)")


def _row(name: str, m: dict, *, notes: str, target: bool = True) -> dict:
    ratio = m["sequential_s"] / m["concurrent_s"]
    complete = m["failed"] == 0 and m["runner_calls"] == m["calls"]
    n = m["calls"]
    return {
        "benchmark": name,
        "accord": f"{m['concurrent_s']:.2f} s ({n / m['concurrent_s']:.1f} calls/s, {1000 * m['concurrent_s'] / n:.1f} ms/call)",
        "peer": f"sequential openai SDK loop {m['sequential_s']:.2f} s ({1000 * m['sequential_s'] / n:.1f} ms/call)",
        "ratio": f"{ratio:.2f}x",
        "target": f">= {TARGET:g}x" if target else "",
        "met": (ratio >= TARGET and complete) if target else None,
        "notes": notes + f"; load average {m['load'][0]:.1f} before, {m['load'][1]:.1f} after (2 cores, shared)"
                 + ("" if complete else f"; INCOMPLETE: {m['failed']} failed calls"),
    }


# ---- the stub server: a separate process, so its work does not share the runner's interpreter

def _stub_body() -> dict:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "bench-m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "NO"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 600, "completion_tokens": 1, "total_tokens": 601}}


async def _serve_stub(delay_s: float) -> None:
    reply = json.dumps(_stub_body()).encode()
    head = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: "
            + str(len(reply)).encode() + b"\r\n\r\n")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        headers = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower().split("\r\n")
        length = next((int(h.split(":", 1)[1]) for h in headers if h.startswith("content-length:")), 0)
        await reader.readexactly(length)
        await asyncio.sleep(delay_s)
        writer.write(head + reply)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


def _stub_rows(quick: bool) -> list[dict]:
    from judges.spec import build_judge

    n = 100 if quick else STUB_CALLS
    rows = []
    for delay in (0.0, STUB_LATENCY_S):
        stub = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_judges", "stub", "--delay", str(delay)],
                                stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
        try:
            base_url = f"http://127.0.0.1:{int(stub.stdout.readline())}"
            # provider `local`: the same request shape and one-connection-per-call client as for llama-server
            judge = build_judge({"prompt": "ise-escalate", "provider": "local", "model": "bench-m", "base_url": base_url,
                                 "params": PAPER_PARAMS, "max_retries": 0})
            with tempfile.TemporaryDirectory(prefix="accord-bench-judges-") as tmp:
                m = _side_by_side(base_url, [judge], _units(n, f"st{int(delay * 1000)}"), Path(tmp))
        finally:
            stub.terminate()
            stub.wait()
        if delay == 0:
            rows.append(_row(
                f"judges: runner overhead, {n} calls to an instant local stub server", m, target=False,
                notes=f"the stub answers at once from its own process; the runner's {judge.concurrency} concurrent "
                      f"calls include its SQLite cache commit and labels line per call, the loop only the SDK call, "
                      f"so ms/call is the runner's cost per call (no target: nothing to overlap)"))
        else:
            rows.append(_row(
                f"judges: runner vs sequential loop, {n} calls to a stub answering after {delay * 1000:g} ms", m,
                notes=f"hosted-API-like latency and no compute: the runner overlaps {judge.concurrency} calls "
                      f"(the default judge concurrency), so the ratio's ceiling is {judge.concurrency}x"))
    return rows


# ---- llama-server

def _llama_rows(quick: bool) -> list[dict]:
    from judges.local_server import LlamaServer
    from judges.runner import StudyPaths, run_judges
    from judges.spec import build_judge

    rows = []
    with LlamaServer(name="llama-server-bench") as server, tempfile.TemporaryDirectory(prefix="accord-bench-judges-") as tmp:
        tmp = Path(tmp)
        settings = (f"server as shipped: {server.parallel} slots and {server.threads} thread per model, "
                    f"{server.ctx_size // server.parallel} tokens of context per slot")
        prompt = tmp / "bench-short.toml"
        prompt.write_text('name = "bench-short"\nversion = "1"\noutput = "yes_no"\nunit_kinds = ["escalate_final"]\n'
                          'source = "accord benchmark"\nsystem = "Does the answer mention two different years? Say why."\n')
        short = [build_judge({"prompt": str(prompt), "provider": "local", "model": model, "base_url": server.base_url,
                              "params": {"temperature": 0.0, "max_tokens": 2}, "timeout_s": 3600})
                 for model in LlamaServer.MODELS]
        run_judges(_units(2, "x"), short, StudyPaths.in_dir(tmp / "warm"))  # first-call costs of both models

        n = 4 if quick else PROMPT_BOUND_UNITS
        # Cheap enough to repeat: alternating rounds, the median one reported, damp a shared machine's noise.
        rounds = [_side_by_side(server.base_url, short, _units(n, f"p{r}"), tmp / f"prompt{r}", cpu=server.cpu_seconds)
                  for r in range(ROUNDS)]
        rounds.sort(key=lambda r: r["sequential_s"] / r["concurrent_s"])
        m = rounds[len(rounds) // 2]
        spread = ", ".join(f"{r['sequential_s'] / r['concurrent_s']:.2f}x" for r in rounds)
        rows.append(_row(
            f"judges: runner vs sequential loop, {m['calls']} prompt-bound calls to local llama-server "
            f"({n} units x 2 models)", m,
            notes=f"one-line prompt, grammar YES/NO, max_tokens 2, temperature 0, cache_prompt false; SmolLM2 and "
                  f"Gemma judges in one run; {settings}. {_server_work(m)}: prompt processing is compute-bound and "
                  f"parallel slots do not share it; the runner gains by keeping both models' processes (one core "
                  f"each) busy at once; {m['identical']}/{m['calls']} outputs identical; median of {ROUNDS} "
                  f"alternating rounds (sequential, runner), their ratios {spread}"))

        k = 1 if quick else PAPER_UNITS
        paper = [build_judge({"prompt": "ise-escalate", "provider": "local", "model": model, "base_url": server.base_url,
                              "params": PAPER_PARAMS, "timeout_s": 3600}) for model in LlamaServer.MODELS]
        m = _side_by_side(server.base_url, paper, _units(k, "e"), tmp / "paper", cpu=server.cpu_seconds)
        tokens = "; ".join(f"{name.split(':')[-1]} {a} vs {b}" for name, (a, b) in m["per_judge"].items())
        rows.append(_row(
            f"judges: runner vs sequential loop, ISE paper judge config, {k} units x 2 local models", m,
            notes=f"ISE App. A.3 configuration: verbatim Escalate prompt, temperature 1, no max_tokens cap, free text "
                  f"(unconstrained), seed {SEED} per request, cache_prompt false; {settings}, so a model that never "
                  f"stops (Gemma 270M base) decodes until its slot's context is full. Tokens generated sequential vs "
                  f"runner: {m['seq_tokens']} vs {m['conc_tokens']} ({tokens}); {m['identical']}/{m['calls']} outputs "
                  f"identical (batched decoding changes float rounding, so sampled text may drift). {_server_work(m)}: "
                  f"decoding is compute-bound on this CPU, batching Gemma's slots saves no work, and Gemma's "
                  f"run-on decode is nearly all of it, so running SmolLM2 beside it hides almost nothing"))
    return rows


def run(quick: bool = False) -> list[dict]:
    return [_warm_cache(quick), *_stub_rows(quick), *_llama_rows(quick)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    stub = sub.add_parser("stub", help="serve the stub chat endpoint on a free port (printed on stdout)")
    stub.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    if args.command == "stub":
        asyncio.run(_serve_stub(args.delay))
        return
    for row in run(quick=True):
        print(row)


if __name__ == "__main__":
    main()
