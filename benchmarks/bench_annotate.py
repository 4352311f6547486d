"""Coding app: label submit round trip with 5 concurrent browser sessions (target p95 < 300 ms),
and page ready for a long unit (target < 500 ms).

Five annotators, each in their own browser context (own cookies, own Streamlit
session) of one headless chromium, label at once against one `accord app` server,
as fast as the page lets them. The five sign in first and wait for each other, so
the timed submits overlap one another and not the page loads. A round trip runs from
the Submit key press (Python clock, before the key is sent) until the page shows
both the store's confirmation ("Saved '<label>' (revision 1).") and the next task,
and the browser has painted that frame; the store is then checked for exactly the
labels submitted. The same interval measured inside the page (the key event's time
stamp to the painted frame) and the CPU seconds the server and the browsers used
show where the time goes; the store API alone, driven by five threads, is the floor.
On this one 2-core machine the five browsers' rendering competes with the server for
the CPU, which five annotators on their own computers would not.

Page ready: one annotator opens a 50-turn tool-using trajectory with 200 KB of tool output
(tests/annotate/long_units.py, an identify_turn unit on its last turn, all 50 turns as
context). Ready means the frame is painted that shows the unit (its last turn in the page)
and its new form, with the page's key listener acting on that form (keys live); a label key
is then pressed and its choice painted, which checks the keys and gives a second figure that
includes Playwright's key round trip. Measured in the page's own clock, two ways: opening the
unit from the task before it (from the N key) and a reload of the page (from navigation
start: Streamlit's page load, the session cookie signing the tab in again, the unit drawn).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from annotate.app_backend import AppBackend
from samples.records import BlindTask

SESSIONS = 5
# Streamlit keeps the previous run's elements (the focused token field included) until a
# run ends; keys pressed before then land in the stale field, so wait for an idle app.
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
TARGET_MS = 300.0
READY_TARGET_MS = 500.0
READY_TURNS, READY_TOOL_BYTES = 50, 200_000
# The second run gives each annotator a reading time before every label, drawn uniformly from
# this range (seconds, seeded per annotator): people read a unit before labelling it, so their
# submits rarely coincide, unlike the first run's five annotators pressing keys flat out.
READING_S = (1.0, 3.0)
SEED = 20261130
TIMEOUT_S = 60.0
# Armed once the chosen label shows, just before the Submit key press: resolves once the
# main area holds the next task and the store's confirmation, after the frame showing them is
# painted. MutationObservers rather than polling, and narrow ones (the main area's text, the
# attributes waited for), so the harness adds little work to browsers busy rendering.
ARM_ROUND_TRIP = """([chosen, task, saved]) => new Promise((armed) => {
  const arm = () => {
    window.__accordRoundTrip = new Promise((resolve) => {
      let pressed = null;
      document.addEventListener("keydown", (event) => { if (event.key === "s" && pressed === null) pressed = event.timeStamp; }, {capture: true, once: true});
      const main = document.querySelector('[data-testid="stMain"]');
      const shown = () => main.textContent.includes(task) && main.textContent.includes(saved);
      const observer = new MutationObserver(() => {
        if (!shown()) return;
        observer.disconnect();
        requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - pressed)));
      });
      observer.observe(main, {subtree: true, childList: true, characterData: true});
    });
    armed();
  };
  if (document.querySelector(chosen)) return arm();
  const observer = new MutationObserver(() => { if (document.querySelector(chosen)) { observer.disconnect(); arm(); } });
  observer.observe(document.body, {subtree: true, attributes: true, attributeFilter: ["aria-checked"]});
})"""


WAIT_FOR = """([selector, attributes]) => new Promise((resolve) => {
  if (document.querySelector(selector)) return resolve();
  const observer = new MutationObserver(() => { if (document.querySelector(selector)) { observer.disconnect(); resolve(); } });
  observer.observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: attributes});
})"""


async def _wait_for(page, selector: str, attributes: list[str]) -> None:
    """Until ``selector`` matches, re-checked when nodes or the named attributes change."""
    try:
        await asyncio.wait_for(page.evaluate(WAIT_FOR, [selector, attributes]), TIMEOUT_S)
    except TimeoutError:
        raise RuntimeError(f"the page never showed {selector!r} within {TIMEOUT_S:.0f} s") from None


def _study(root: Path, n_tasks: int, n_annotators: int = SESSIONS) -> tuple[Path, dict[str, str], AppBackend]:
    tasks = [BlindTask(task_id=f"t_{i:04d}", kind="escalate_final", text=f"Final answer {i}: the album came out in 1969.") for i in range(n_tasks)]
    names = [f"annotator{i:02d}" for i in range(n_annotators)]
    (root / "blind").mkdir(parents=True)
    (root / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    (root / "blind" / "orders.json").write_text(json.dumps({name: [t.task_id for t in tasks] for name in names}))
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    return root, {name: backend.store.add_annotator(name) for name in names}, backend


def _label(i: int) -> str:
    return "yes" if i % 2 else "no"


async def _annotate(context, url: str, token: str, n_submits: int, n_tasks: int, ready: asyncio.Barrier,
                    reading: np.random.Generator | None, signing_in: asyncio.Semaphore) -> list[tuple[float, float]]:
    """(round trip by the Python clock, the same in the page) per submit, in seconds; with
    ``reading``, a reading time from READING_S before each label."""
    page = await context.new_page()
    async with signing_in:  # people arrive a few at a time, not all in one instant
        await page.goto(url, timeout=120_000)
        await page.get_by_label("Token").fill(token)
        await page.get_by_role("button", name="Sign in").click()
        await page.get_by_text(f"Task 1 of {n_tasks}", exact=True).wait_for(timeout=120_000)
        await page.locator(IDLE).wait_for(timeout=120_000)
        # The workspace's code loads on first use: keys pressed before its form is drawn are lost.
        await page.locator(".accord-label-form [role=radio]").first.wait_for(timeout=120_000)
    await ready.wait()
    timings = []
    for i in range(n_submits):
        label = _label(i)
        if reading is not None:
            await asyncio.sleep(reading.uniform(*READING_S))
        # The label by its key (drawn in the browser: no server round trip); the round trip measured is the submit key's.
        number = 1 if label == "yes" else 2
        await page.keyboard.press(str(number))
        chosen = f'.accord-label-form [role=radio]:nth-of-type({number})[aria-checked="true"]'
        await asyncio.wait_for(page.evaluate(ARM_ROUND_TRIP, [chosen, f"Task {i + 2} of {n_tasks}", f"Saved '{label}' (revision 1)."]), TIMEOUT_S)
        start = time.perf_counter()
        await page.keyboard.press("s")
        try:
            in_page_ms = await asyncio.wait_for(page.evaluate("window.__accordRoundTrip"), TIMEOUT_S)
        except TimeoutError:
            shown = await page.locator('[data-testid="stMain"]').inner_text()
            raise RuntimeError(f"submit {i + 1}: no confirmation within {TIMEOUT_S:.0f} s; the page shows {shown[:300]!r}") from None
        timings.append((time.perf_counter() - start, in_page_ms / 1000))
        await _wait_for(page, IDLE, ["data-test-script-state"])
    return timings


def _cpu_seconds(server_pids: Sequence[int]) -> dict[str, float]:
    """CPU seconds (user + system) used so far by the servers' processes, by chromium's and by the
    rest of this process's children (the Playwright driver), read from Linux's /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu, command = {}, {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid, fields = int(entry.name), stat[stat.rfind(")") + 2:].split()
        parent[pid], cpu[pid], command[pid] = int(fields[1]), (int(fields[11]) + int(fields[12])) / tick, stat[stat.find("(") + 1:stat.rfind(")")]
    totals = {"server": 0.0, "browsers": 0.0, "driver": 0.0}
    me = os.getpid()
    for pid, seconds in cpu.items():
        node = pid
        while parent.get(node, 0) not in (me, 0, 1):
            node = parent[node]
        if parent.get(node) == me:
            part = "server" if node in server_pids else "browsers" if "chrom" in command[pid] else "driver"
            totals[part] += seconds
    return totals


async def _browser_round_trips(urls: Sequence[str], tokens: dict[str, str], n_submits: int, n_tasks: int,
                               server_pids: Sequence[int], *, read: bool = False) -> tuple[np.ndarray, dict[str, float]]:
    """Every annotator in their own browser context, annotator i at server ``urls[i % len(urls)]``."""
    from playwright.async_api import async_playwright

    from tests.support.browser import CHROMIUM_ARGS

    chromium = shutil.which("chromium")
    if chromium is None:
        raise RuntimeError("Debian's chromium is not installed (scripts/install_system.sh)")
    ready = asyncio.Barrier(len(tokens) + 1)
    signing_in = asyncio.Semaphore(SESSIONS)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        contexts = [await browser.new_context(viewport={"width": 1280, "height": 1800}) for _ in tokens]
        sessions = asyncio.ensure_future(asyncio.gather(*[
            _annotate(context, urls[number % len(urls)], token, n_submits, n_tasks, ready,
                      np.random.default_rng([SEED, number]) if read else None, signing_in)
            for number, (context, token) in enumerate(zip(contexts, tokens.values(), strict=True))
        ]))
        all_signed_in = asyncio.ensure_future(ready.wait())
        await asyncio.wait({sessions, all_signed_in}, return_when=asyncio.FIRST_COMPLETED)
        if sessions.done():
            sessions.result()  # a session that failed before the barrier: raise its error, not a hang
        before = _cpu_seconds(server_pids)
        results = await sessions
        after = _cpu_seconds(server_pids)
        await browser.close()
    return np.asarray([timing for session in results for timing in session]), {part: after[part] - before[part] for part in after}


def _check_stored(backend: AppBackend, tokens: dict[str, str], n_submits: int) -> None:
    """Every timed submit stored exactly once with the label pressed: a round trip that stored nothing is no round trip."""
    expected = [(f"t_{i:04d}", _label(i), 1) for i in range(n_submits)]
    for name in tokens:
        stored = [(row.task_id, row.label, len(backend.store.history(name, row.task_id))) for row in backend.store.labels(annotator=name)]
        if stored != expected:
            raise RuntimeError(f"{name}: the store holds (task, label, revisions) {stored}, expected {expected}")


def _store_round_trips(backend: AppBackend, tokens: dict[str, str], n_submits: int, first_task: int) -> list[float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def write(name: str, token: str) -> None:
        own = []
        for i in range(first_task, first_task + n_submits):
            start = time.perf_counter()
            backend.store.submit(token, f"t_{i:04d}", "yes", submission_id=f"bench-{name}-{i:06d}")
            own.append(time.perf_counter() - start)
        with lock:
            latencies.extend(own)

    threads = [threading.Thread(target=write, args=item) for item in tokens.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def _measure(root: Path, n_submits: int, *, read: bool) -> tuple[np.ndarray, dict[str, float], AppBackend, dict[str, str]]:
    from tests.annotate.server import coding_app
    from tests.support.servers import REPO

    n_tasks = 2 * n_submits + 2
    root, tokens, backend = _study(root, n_tasks)
    name = "bench-coding-app"
    with coding_app(root, name=name) as url:
        server_pid = int((REPO / ".run" / f"{name}.pid").read_text())
        timings, cpu = asyncio.run(_browser_round_trips([url], tokens, n_submits, n_tasks, [server_pid], read=read))
    _check_stored(backend, tokens, n_submits)
    return timings, cpu, backend, tokens


# Armed before the key that opens the long unit: resolves with that key's time stamp once the
# frame is painted in which the unit's last turn and its new form, acted on by the key
# listener (window.accordWorkspace.view.form), are shown.
ARM_UNIT_READY = """([task, last]) => { window.__accordReady = new Promise((resolve) => {
  let pressed = null;
  document.addEventListener("keydown", (event) => { if (pressed === null) pressed = event.timeStamp; }, {capture: true, once: true});
  const ready = () => document.querySelector(`.accord-pane .accord-turn[data-turn="${last}"]`) && window.accordWorkspace.view.form.accordForm.includes(task);
  const observer = new MutationObserver(() => {
    if (!ready()) return;
    observer.disconnect();
    requestAnimationFrame(() => setTimeout(() => resolve([pressed, performance.now()])));
  });
  observer.observe(document.body, {subtree: true, childList: true});
}); }"""
# After a reload: resolves once the unit is painted as above (a unit without turns: its form),
# in the page's clock (0 = navigation start).
UNIT_PAINTED = """([task, last]) => new Promise((resolve) => {
  const ready = () => (last === null || document.querySelector(`.accord-pane .accord-turn[data-turn="${last}"]`)) && window.accordWorkspace && window.accordWorkspace.view.form.accordForm.includes(task);
  const done = () => requestAnimationFrame(() => setTimeout(() => resolve(performance.now())));
  if (ready()) return done();
  const observer = new MutationObserver(() => { if (ready()) { observer.disconnect(); done(); } });
  observer.observe(document.documentElement, {subtree: true, childList: true});
})"""
# Resolves with the page's clock at the frame painting the first label as chosen (keys live).
LABEL_PAINTED = """() => new Promise((resolve) => {
  const chosen = () => document.querySelector('.accord-label-form [role=radio][aria-checked="true"]');
  const done = () => requestAnimationFrame(() => setTimeout(() => resolve(performance.now())));
  if (chosen()) return done();
  const observer = new MutationObserver(() => { if (chosen()) { observer.disconnect(); done(); } });
  observer.observe(document.body, {subtree: true, attributes: true, attributeFilter: ["aria-checked"]});
})"""


def _ready_study(root: Path) -> tuple[Path, AppBackend, str, int]:
    from tests.annotate.long_units import long_tasks

    long_unit = long_tasks(READY_TURNS, READY_TOOL_BYTES)[0]
    tasks = [BlindTask(task_id="t_short", kind="escalate_final", text="The album came out in 1969."), long_unit]
    (root / "blind").mkdir(parents=True)
    (root / "blind" / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    (root / "blind" / "orders.json").write_text(json.dumps({"reader": [t.task_id for t in tasks]}))
    backend = AppBackend(study=root)
    backend.push_files(root / "blind")
    tool_bytes = sum(len(call.split("[tool result] ", 1)[1]) for turn in long_unit.turns for call in turn.split("\n[tool call] ")[1:])
    return root, backend, backend.store.add_annotator("reader"), tool_bytes


def _page_ready(root: Path, n_open: int, n_reload: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per trial (ready ms, label key painted ms) opening from the task before, the same after a
    reload; ready ms after a reload showing the one-line unit (the page's own load); the unit's
    tool-output characters."""
    from playwright.sync_api import sync_playwright

    from tests.annotate.server import coding_app
    from tests.support.browser import CHROMIUM_ARGS

    root, backend, token, tool_bytes = _ready_study(root)
    task, last = "t_long_turn", READY_TURNS - 1
    opened, reloaded, baseline = [], [], []
    with coding_app(root, name="bench-page-ready") as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
        page.goto(url)
        page.get_by_label("Token").fill(token)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_text("Task 1 of 2", exact=True).wait_for(timeout=60_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        for _ in range(n_open + 1):  # the first opening warms the server's unit cache: not timed
            page.locator(".accord-label-form [role=radio]").first.wait_for(timeout=60_000)
            page.evaluate(ARM_UNIT_READY, [task, last])
            page.keyboard.press("n")
            start, ready = page.evaluate("window.__accordReady")
            page.keyboard.press("1")
            opened.append((ready - start, page.evaluate(LABEL_PAINTED) - start))
            page.locator(IDLE).wait_for(timeout=60_000)
            page.keyboard.press("p")
            page.get_by_text("Task 1 of 2", exact=True).wait_for(timeout=60_000)
            page.locator(IDLE).wait_for(timeout=60_000)
        for _ in range(n_reload):  # a reload resumes at the first unlabelled task: the one-line unit
            page.reload(wait_until="commit")
            baseline.append(page.evaluate(UNIT_PAINTED, ["t_short", None]))
            page.locator(IDLE).wait_for(timeout=60_000)
        # With the one-line unit labelled, a reload resumes at the long unit.
        backend.store.submit(token, "t_short", "yes", submission_id="bench-page-ready-short")
        for _ in range(n_reload):
            page.reload(wait_until="commit")
            ready = page.evaluate(UNIT_PAINTED, [task, last])
            page.keyboard.press("1")
            reloaded.append((ready, page.evaluate(LABEL_PAINTED)))
            page.locator(IDLE).wait_for(timeout=60_000)
        browser.close()
    return np.asarray(opened[1:]), np.asarray(reloaded), np.asarray(baseline), tool_bytes


def run(quick: bool = False) -> list[dict]:
    n_submits, n_read = (6, 3) if quick else (40, 12)
    with tempfile.TemporaryDirectory(prefix="accord-bench-annotate-") as tmp:
        timings, cpu, backend, tokens = _measure(Path(tmp) / "flat-out", n_submits, read=False)
        store = np.asarray(_store_round_trips(backend, tokens, n_submits, n_submits + 1))
        reading, _, _, _ = _measure(Path(tmp) / "reading", n_read, read=True)
        opened, reloaded, baseline, tool_bytes = _page_ready(Path(tmp) / "page-ready", *((3, 2) if quick else (20, 10)))
    browser, in_page = timings[:, 0] * 1000, timings[:, 1] * 1000
    browser_p95 = float(np.percentile(browser, 95))
    store_p95 = float(np.percentile(store, 95)) * 1000
    read_ms = reading[:, 0] * 1000
    return [
        {
            "benchmark": f"coding app submit round trip p95, {SESSIONS} concurrent browser sessions",
            "accord": f"{browser_p95:.0f} ms",
            "peer": "",
            "ratio": "",
            "target": f"< {TARGET_MS:.0f} ms",
            "met": browser_p95 < TARGET_MS,
            "notes": (
                f"{browser.size} submits, {SESSIONS} annotators labelling flat out (label key, then S) until the confirmation and "
                f"the next task are painted, {SESSIONS} contexts of one headless chromium via Playwright, all signed in before "
                f"the timed submits; median {np.median(browser):.0f} ms; "
                f"in the page (key event to painted frame) median {np.median(in_page):.0f} ms, p95 {np.percentile(in_page, 95):.0f} ms; "
                f"CPU per submit (label key + submit, all on the same {os.cpu_count()} cores): server {cpu['server'] / browser.size * 1000:.0f} ms, "
                f"chromium {cpu['browsers'] / browser.size * 1000:.0f} ms, Playwright driver {cpu['driver'] / browser.size * 1000:.0f} ms; "
                f"store API alone p95 {store_p95:.1f} ms"
            ),
        },
        {
            "benchmark": f"coding app submit round trip p95, {SESSIONS} concurrent sessions reading {READING_S[0]:.0f}-{READING_S[1]:.0f} s per unit",
            "accord": f"{np.percentile(read_ms, 95):.0f} ms",
            "peer": "",
            "ratio": "",
            "target": "",
            "met": None,
            "notes": (
                f"{read_ms.size} submits; as the row above, but each annotator reads each unit for a seeded uniform "
                f"{READING_S[0]:.0f}-{READING_S[1]:.0f} s before labelling; median {np.median(read_ms):.0f} ms"
            ),
        },
        {
            "benchmark": f"coding app page ready p95 after a reload, {READY_TURNS}-turn trajectory with {READY_TOOL_BYTES // 1000} KB of tool output",
            "accord": f"{np.percentile(reloaded[:, 0], 95):.0f} ms",
            "peer": "",
            "ratio": "",
            "target": f"< {READY_TARGET_MS:.0f} ms",
            "met": bool(np.percentile(reloaded[:, 0], 95) < READY_TARGET_MS),
            "notes": (
                f"one annotator, headless chromium; navigation start to the frame showing the unit and its form with the keys "
                f"live (Streamlit's page load, signed in again by the session cookie), {len(reloaded)} reloads, median "
                f"{np.median(reloaded[:, 0]):.0f} ms; to a label key's choice painted p95 {np.percentile(reloaded[:, 1], 95):.0f} ms; "
                f"{tool_bytes:,} characters of tool output, long blocks folded; the same reload showing a one-line unit "
                f"(the page's own load): p95 {np.percentile(baseline, 95):.0f} ms, median {np.median(baseline):.0f} ms"
            ),
        },
        {
            "benchmark": f"coding app page ready p95 opening the unit from the task before, {READY_TURNS} turns, {READY_TOOL_BYTES // 1000} KB of tool output",
            "accord": f"{np.percentile(opened[:, 0], 95):.0f} ms",
            "peer": "",
            "ratio": "",
            "target": f"< {READY_TARGET_MS:.0f} ms",
            "met": bool(np.percentile(opened[:, 0], 95) < READY_TARGET_MS),
            "notes": (
                f"as the row above, from the N key (sidebar shortcut) to the frame showing the unit, {len(opened)} runs, median "
                f"{np.median(opened[:, 0]):.0f} ms; to a label key's choice painted p95 {np.percentile(opened[:, 1], 95):.0f} ms"
            ),
        },
        {
            "benchmark": f"store submit p95, {SESSIONS} concurrent writer threads (no browser)",
            "accord": f"{store_p95:.1f} ms",
            "peer": "",
            "ratio": "",
            "target": "",
            "met": None,
            "notes": "one BEGIN IMMEDIATE transaction per submit, WAL, synchronous=FULL; the floor under the browser round trip",
        },
    ]


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)
