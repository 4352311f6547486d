"""Start and stop llama.cpp's llama-server with the two local judge models.

One router process serves both models (``--models-preset``), each under its own name
(``smollm2``, ``gemma3-270m``); it speaks the OpenAI chat API and the Anthropic
Messages API on 127.0.0.1. The binary and the GGUF files come from
``scripts/llama_server.sh install``; their paths are read from that script (or the
ACCORD_LLAMA_SERVER / ACCORD_SMOLLM2_GGUF / ACCORD_GEMMA_GGUF variables). The process
id goes to ``.run/<name>.pid`` so ``scripts/stop_services.sh`` can end a leftover, and
a state file ``.run/<name>.json`` tells the `local` provider where the server is.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from samples import InputError

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "llama_server.sh"
TEMPLATES = Path(__file__).with_name("templates")
DEFAULT_NAME = "llama-server"
INSTALL_HINT = "run `bash scripts/llama_server.sh install` (builds llama-server, fetches the models)"


def run_dir() -> Path:
    return Path(os.environ.get("ACCORD_RUN_DIR", REPO / ".run"))


def installed_paths() -> dict[str, Path]:
    """llama-server binary and model files, as the install script lays them out."""
    paths: dict[str, str] = {}
    if SCRIPT.exists():
        out = subprocess.run(["bash", str(SCRIPT), "paths"], capture_output=True, text=True, check=True).stdout
        paths = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    for key, env in (("LLAMA_SERVER", "ACCORD_LLAMA_SERVER"), ("SMOLLM2_GGUF", "ACCORD_SMOLLM2_GGUF"),
                     ("GEMMA_GGUF", "ACCORD_GEMMA_GGUF")):
        if os.environ.get(env):
            paths[key] = os.environ[env]
    missing = [key for key in ("LLAMA_SERVER", "SMOLLM2_GGUF", "GEMMA_GGUF") if not paths.get(key) or not Path(paths[key]).exists()]
    if missing:
        raise InputError(f"local judges not installed ({', '.join(missing)} missing): {INSTALL_HINT}")
    return {key: Path(value) for key, value in paths.items()}


def models_preset(paths: dict[str, Path], *, ctx_size: int, parallel: int, threads: int) -> str:
    """The INI preset: both models, loaded at start-up, Gemma with the shipped chat template.

    ``poll = 0``: llama.cpp's worker threads otherwise spin while waiting for work,
    which on a small machine shared with other processes starves everything else.
    """
    return "\n".join([
        "version = 1",
        "[*]",
        f"ctx-size = {ctx_size}",
        f"parallel = {parallel}",
        f"threads = {threads}",
        "poll = 0",
        "load-on-startup = true",
        "[smollm2]",
        f"model = {paths['SMOLLM2_GGUF']}",
        "[gemma3-270m]",
        f"model = {paths['GEMMA_GGUF']}",
        f"chat-template-file = {TEMPLATES / 'gemma3.jinja'}",
        "",
    ])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def read_state(name: str = DEFAULT_NAME) -> dict[str, Any] | None:
    """The running server's state file, or None when it is absent or its process is gone."""
    path = run_dir() / f"{name}.json"
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    try:
        os.kill(int(state["pid"]), 0)
    except (OSError, KeyError, ValueError):
        return None
    return state


class LlamaServer:
    """A llama-server router serving ``smollm2`` and ``gemma3-270m`` on 127.0.0.1."""

    MODELS = ("smollm2", "gemma3-270m")

    def __init__(self, *, name: str = DEFAULT_NAME, port: int | None = None, ctx_size: int = 8192,
                 parallel: int = 4, threads: int = 1, startup_timeout_s: float = 180.0) -> None:
        """``threads`` per model: one by default. The two models run side by side, one process
        each, so one thread each fills 2 cores; ggml's threads meet at spinning barriers, and
        with more threads than free cores a preempted thread stalls the rest (on this shared
        2-core machine SmolLM2 decoded 9 tokens/s with 2 threads, 62 with 1, minutes apart).
        Raise it on a bigger box. ``parallel`` slots share ``ctx_size`` equally; on this CPU
        batching slots saves almost no compute (decoding is compute-bound), so slots buy
        overlap of requests, not throughput (benchmarks/bench_judges.py)."""
        for label, value in (("ctx_size", ctx_size), ("parallel", parallel), ("threads", threads)):
            if not isinstance(value, int) or value <= 0:
                raise InputError(f"LlamaServer: {label} must be a positive integer, got {value!r}")
        self.name = name
        self.port = port or _free_port()
        self.ctx_size = ctx_size
        self.parallel = parallel
        self.threads = threads
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _files(self) -> tuple[Path, Path, Path, Path]:
        folder = run_dir()
        folder.mkdir(parents=True, exist_ok=True)
        return (folder / f"{self.name}.pid", folder / f"{self.name}.json", folder / f"{self.name}.ini",
                folder / f"{self.name}.log")

    def start(self) -> LlamaServer:
        paths = installed_paths()
        pid_file, state_file, preset_file, log_file = self._files()
        if read_state(self.name) is not None:
            raise InputError(f"{self.name} is already running ({state_file}); stop it first: accord judges stop")
        preset_file.write_text(models_preset(paths, ctx_size=self.ctx_size, parallel=self.parallel, threads=self.threads))
        with log_file.open("ab") as log:
            self.process = subprocess.Popen(
                [str(paths["LLAMA_SERVER"]), "--models-preset", str(preset_file), "--host", "127.0.0.1",
                 "--port", str(self.port), "--no-webui"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        pid_file.write_text(str(self.process.pid))
        try:
            self._wait_ready(log_file)
        except BaseException:
            self.stop()
            raise
        state_file.write_text(json.dumps({"pid": self.process.pid, "base_url": self.base_url, "models": list(self.MODELS),
                                          "log": str(log_file), "context_per_slot": self.ctx_size // self.parallel}))
        return self

    def _wait_ready(self, log_file: Path) -> None:
        import httpx

        deadline = time.monotonic() + self.startup_timeout_s
        status: dict[str, str] = {}
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = log_file.read_text(errors="replace")[-1500:]
                raise RuntimeError(f"llama-server exited with {self.process.returncode}:\n{tail}")
            try:
                data = httpx.get(f"{self.base_url}/models", timeout=2.0).json()
                status = {m["id"]: (m.get("status") or {}).get("value", "") for m in data.get("data", [])}
                failed = [m["id"] for m in data.get("data", []) if (m.get("status") or {}).get("failed")]
                if failed:
                    raise RuntimeError(f"llama-server could not load {failed}; see {log_file}")
                if all(status.get(model) == "loaded" for model in self.MODELS):
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"llama-server not ready after {self.startup_timeout_s:g} s (models: {status}); see {log_file}")

    def stop(self) -> None:
        pid_file, state_file, _, _ = self._files()
        pid = self.process.pid if self.process else (int(pid_file.read_text()) if pid_file.exists() else None)
        if pid is not None:
            stop_process_group(pid)
        if self.process is not None:
            self.process.wait()
        for path in (pid_file, state_file):
            path.unlink(missing_ok=True)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time used so far by the router (``router``) and each model's process (by model
        name): the work a run cost the server, which, unlike wall time, does not depend on how
        runs overlap it."""
        if self.process is None:
            raise RuntimeError("cpu_seconds: the server was not started by this object")
        return {_alias(pid) or "router": seconds for pid, seconds in group_cpu_seconds(self.process.pid).items()}

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _group_stats(pgid: int) -> dict[int, list[str]]:
    """/proc stat fields (after the command name) of every process in group ``pgid``, by pid."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            found[int(stat.parent.name)] = fields
    return found


def _group_running(pgid: int) -> bool:
    """A live (non-zombie) process in group ``pgid``; zombies wait for a reaper, they run nothing."""
    return any(fields[0] != "Z" for fields in _group_stats(pgid).values())


def group_cpu_seconds(pgid: int) -> dict[int, float]:
    """User + system CPU seconds of each live process in group ``pgid`` (router and model children), by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    return {pid: (int(fields[11]) + int(fields[12])) / tick
            for pid, fields in _group_stats(pgid).items() if fields[0] != "Z"}


def _alias(pid: int) -> str | None:
    """The model a llama-server child serves (its ``--alias``), None for the router."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    return argv[argv.index(b"--alias") + 1].decode() if b"--alias" in argv else None


def stop_process_group(pid: int, *, grace_s: float = 10.0) -> None:
    """TERM the process group ``pid`` leads (router and its model children), then KILL."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not _group_running(pid):
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stop_named(name: str = DEFAULT_NAME) -> bool:
    """Stop a server started by another process (``accord judges stop``); False if none ran."""
    pid_file = run_dir() / f"{name}.pid"
    if not pid_file.exists():
        return False
    stop_process_group(int(pid_file.read_text()))
    pid_file.unlink(missing_ok=True)
    (run_dir() / f"{name}.json").unlink(missing_ok=True)
    return True
