"""The runner against a real HTTP server that injects faults, through the official SDKs."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC

import pytest

from judges.prices import PriceTable
from judges.runner import StudyPaths, run_judges
from judges.spec import build_judge
from judges.tables import read_labels, read_run_log
from tests.judges.units import escalate_unit, escalate_units

SCRIPTS = {
    "plain": "",
    "rate": "#fault:429:1,ok",
    "flaky": "#fault:500,500,ok:NO",
    "malformed": "#fault:malformed,ok",
    "reset": "#fault:reset,ok",
    "slow": "#fault:slow:4,ok",
    "dead": "#fault:500",
    "bad-request": "#fault:400,ok",
}
MAX_RETRIES = 3
TIMEOUT_S = 1.5


def _judge(server, api: str, **extra):
    config = {"prompt": "ise-escalate", "provider": api, "model": "judge-m", "name": f"escalate-{api}",
              "base_url": server.base_url + ("/v1" if api == "openai" else ""), "timeout_s": TIMEOUT_S,
              "max_retries": MAX_RETRIES, "backoff_s": 0.05, "concurrency": 8}
    if api == "anthropic":
        config["params"] = {"max_tokens": 8}
    config.update(extra)
    return build_judge(config)


def _units():
    return {name: escalate_unit(f"traj-{name}", f"The bridge opened in 1971. {script}") for name, script in SCRIPTS.items()}


def _cached_keys(path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT key FROM responses")}


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_retries_failures_and_no_cached_failures(fault_server, tmp_path, api: str) -> None:
    units = _units()
    paths = StudyPaths.in_dir(tmp_path)
    summary = run_judges(list(units.values()), [_judge(fault_server, api)], paths)
    actions = {name: fault_server.actions_for(unit.text) for name, unit in units.items()}
    assert actions["plain"] == ["ok"]
    assert actions["rate"] == ["429:1", "ok"]
    assert actions["flaky"] == ["500", "500", "ok:NO"]
    assert actions["malformed"] == ["malformed", "ok"]
    assert actions["reset"] == ["reset", "ok"]
    assert actions["slow"] == ["slow:4", "ok"]
    assert actions["dead"] == ["500"] * (MAX_RETRIES + 1)
    assert actions["bad-request"] == ["400"]  # a client error is not retried

    # Retry-After: 1 is honoured: the second attempt comes at least a second later.
    times = [a.at for a in fault_server.attempts if a.user == units["rate"].text]
    assert times[1] - times[0] >= 1.0

    table = read_labels(paths.labels)
    assert sorted(k[0] for k in table) == sorted(u.unit_id for u in units.values())  # none lost, none doubled
    assert sum(1 for _ in paths.labels.open()) == len(units)
    by_name = {name: table[(unit.unit_id, f"escalate-{api}", 0)] for name, unit in units.items()}
    assert by_name["flaky"].label == "no" and by_name["plain"].label == "yes"
    for name in ("dead", "bad-request"):
        row = by_name[name]
        assert row.label is None and row.parse_status == "unscored"
        assert row.unscored_reason.startswith("call_failed: HTTP")
    assert by_name["dead"].unscored_reason.startswith("call_failed: HTTP 500")

    stats = summary.judges[0]
    assert (stats.ok, stats.unscored, stats.failed) == (6, 2, 2)
    assert stats.unscored_reasons == {"call_failed": 2}
    assert stats.retries == 1 + 2 + 1 + 1 + 1 + MAX_RETRIES
    events = list(read_run_log(paths.runs))
    failed = [e for e in events if e["event"] == "call_failed"]
    assert sorted(e["unit_id"] for e in failed) == sorted([units["dead"].unit_id, units["bad-request"].unit_id])
    assert sum(e["event"] == "retry" for e in events) == stats.retries
    assert any(e["event"] == "retry" and e["retry_after"] == 1.0 for e in events)

    # Only successes are cached: six keys, none of them a failed request's.
    assert len(_cached_keys(paths.cache)) == 6

    # A second run calls only what failed; the successes come from the cache.
    fault_server.attempts.clear()
    again = run_judges(list(units.values()), [_judge(fault_server, api)], paths).judges[0]
    assert {a.user for a in fault_server.attempts} == {units["dead"].text, units["bad-request"].text}
    assert again.already_done == 6 and again.cache_hits == 0
    table = read_labels(paths.labels)
    assert table[(units["bad-request"].unit_id, f"escalate-{api}", 0)].label == "yes"  # its script ends in ok
    assert sum(1 for _ in paths.labels.open()) == len(units)


def test_warm_cache_rerun_makes_no_call(fault_server, tmp_path) -> None:
    units = escalate_units(12)
    run_judges(units, [_judge(fault_server, "openai")], StudyPaths.in_dir(tmp_path / "a", cache=tmp_path / "cache.sqlite"))
    assert len(fault_server.attempts) == 12
    # A new study folder sharing the cache: every label is rebuilt from the cache.
    fault_server.attempts.clear()
    summary = run_judges(units, [_judge(fault_server, "openai")],
                         StudyPaths.in_dir(tmp_path / "b", cache=tmp_path / "cache.sqlite"))
    assert fault_server.attempts == []
    stats = summary.judges[0]
    assert (stats.calls, stats.cache_hits, stats.ok) == (0, 12, 12)
    rows = read_labels(tmp_path / "b" / "labels.jsonl").values()
    assert all(r.cache_hit and r.latency_s == 0.0 and r.label == "yes" for r in rows)


def test_self_consistency_samples_are_separate_rows(fault_server, tmp_path) -> None:
    units = escalate_units(3)
    paths = StudyPaths.in_dir(tmp_path)
    run_judges(units, [_judge(fault_server, "openai", samples=3)], paths)
    table = read_labels(paths.labels)
    assert sorted(table) == sorted((u.unit_id, "escalate-openai", k) for u in units for k in range(3))
    assert len(fault_server.attempts) == 9  # three calls per unit, each cached under its own key
    assert len(_cached_keys(paths.cache)) == 9


def test_requests_per_minute_limit(fault_server, tmp_path) -> None:
    units = escalate_units(8)
    run_judges(units, [_judge(fault_server, "openai", requests_per_minute=120)], StudyPaths.in_dir(tmp_path))
    times = sorted(a.at for a in fault_server.attempts)
    # 120/min = one every 0.5 s after a burst of two: 8 requests span at least 3 s.
    assert len(times) == 8
    assert times[-1] - times[0] >= 2.7


def test_concurrency_is_bounded(fault_server, tmp_path) -> None:
    fault_server.delay_s = 0.4
    units = escalate_units(8)
    started = time.monotonic()
    run_judges(units, [_judge(fault_server, "openai", concurrency=2)], StudyPaths.in_dir(tmp_path))
    # 8 calls of 0.4 s two at a time take at least 1.6 s (all at once would be 0.4 s).
    assert time.monotonic() - started >= 1.6


def test_dry_run_counts_calls_and_tokens_without_calling(fault_server, tmp_path) -> None:
    units = escalate_units(5)
    paths = StudyPaths.in_dir(tmp_path)
    dry = run_judges(units, [_judge(fault_server, "anthropic")], paths, dry_run=True).judges[0]
    assert fault_server.attempts == []
    assert not paths.labels.exists() and not paths.runs.exists()
    assert dry.calls == 5 and dry.estimated_output_tokens == 5 * 8
    system = build_judge({"prompt": "ise-escalate", "provider": "local", "model": "m", "base_url": "http://x"}).prompt.system
    assert dry.estimated_input_tokens == sum(int(len(system + u.text) / 4.0) for u in units)
    run_judges(units[:2], [_judge(fault_server, "anthropic")], StudyPaths.in_dir(tmp_path / "other", cache=paths.cache))
    dry = run_judges(units, [_judge(fault_server, "anthropic")], paths, dry_run=True).judges[0]
    assert (dry.calls, dry.cache_hits) == (3, 2)
    uncapped = run_judges(units, [_judge(fault_server, "openai")], paths, dry_run=True).judges[0]
    assert uncapped.estimated_output_tokens is None and "no max_tokens" in uncapped.estimated_output_reason


def test_cost_from_the_price_file(fault_server, tmp_path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[openai]\n"judge-m" = { input = 1.5, output = 2.0, source = "test contract" }\n')
    units = escalate_units(4)
    paths = StudyPaths.in_dir(tmp_path)
    stats = run_judges(units, [_judge(fault_server, "openai")], paths, prices=PriceTable.load(prices)).judges[0]
    rows = list(read_labels(paths.labels).values())
    tokens_in = sum(r.input_tokens for r in rows)
    tokens_out = sum(r.output_tokens for r in rows)
    assert tokens_in > 0 and tokens_out == 4
    assert stats.cost_usd == pytest.approx((tokens_in * 1.5 + tokens_out * 2.0) / 1e6)
    unpriced = run_judges(units, [_judge(fault_server, "openai", name="other")], paths).judges[0]
    assert unpriced.cost_usd is None and "no price for openai:judge-m" in unpriced.cost_reason


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_refused_connection_is_reported_at_once_not_retried(tmp_path, api: str) -> None:
    """No server listening: one attempt per unit, an unscored 'no server' row, no backoff wait."""
    from tests.support.servers import free_port

    port = free_port()  # bound, then released: nobody listens on it
    judge = build_judge({"prompt": "ise-escalate", "provider": api, "model": "judge-m", "name": f"refused-{api}",
                         "base_url": f"http://127.0.0.1:{port}" + ("/v1" if api == "openai" else ""),
                         "timeout_s": TIMEOUT_S, "max_retries": MAX_RETRIES, "backoff_s": 5.0,
                         **({"params": {"max_tokens": 8}} if api == "anthropic" else {})})
    started = time.monotonic()
    run_judges(escalate_units(2), [judge], StudyPaths.in_dir(tmp_path))
    # MAX_RETRIES retries with a 5 s backoff would take >= 5 s; a refused connection is final.
    assert time.monotonic() - started < 5.0
    paths = StudyPaths.in_dir(tmp_path)
    rows = list(read_labels(paths.labels).values())
    assert len(rows) == 2 and all(r.parse_status == "unscored" for r in rows)
    assert all(r.unscored_reason.startswith("call_failed: no server") for r in rows)
    assert not any(event.get("event") == "retry" for event in read_run_log(paths.runs))


@pytest.mark.parametrize("header", ["3600", "1e12", "inf"])
def test_retry_after_is_capped_by_the_max_backoff(fault_server, tmp_path, header: str) -> None:
    """A server asking for an hour (or for ever) gets max_backoff_s at most; measured between attempts."""
    unit = escalate_unit("traj-ra", f"The bridge opened in 1971. #fault:429:{header},ok")
    paths = StudyPaths.in_dir(tmp_path)
    started = time.monotonic()
    run_judges([unit], [_judge(fault_server, "openai", max_backoff_s=0.4, backoff_s=0.2)], paths)
    assert time.monotonic() - started < 30.0
    assert fault_server.actions_for(unit.text) == [f"429:{header}", "ok"]
    first, second = (a.at for a in fault_server.attempts)
    (retry,) = [e for e in read_run_log(paths.runs) if e["event"] == "retry"]
    if header == "inf":  # not a usable wish: the run's own exponential backoff, within [cap/2, cap]
        assert retry["retry_after"] is None and 0.1 <= retry["wait_s"] <= 0.2
    else:
        assert (retry["retry_after"], retry["wait_s"]) == (float(header), 0.4)
    assert retry["wait_s"] <= second - first < retry["wait_s"] + 5.0
    assert read_labels(paths.labels)[(unit.unit_id, "escalate-openai", 0)].label == "yes"


def test_retry_after_values() -> None:
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    from judges.providers.base import parse_retry_after

    assert parse_retry_after("7") == 7.0 and parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-3") == 0.0  # in the past: go now
    assert parse_retry_after("nan") is None and parse_retry_after("inf") is None and parse_retry_after("soon") is None
    in_an_hour = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    assert 3590 < parse_retry_after(in_an_hour) <= 3600
