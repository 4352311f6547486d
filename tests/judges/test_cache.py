"""The request cache: keys are sha256(canonical request), schema by named migrations, only successes stored."""

from __future__ import annotations

import functools
import hashlib
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judges.cache import MIGRATIONS, RequestCache, RequestKeyer, request_key
from judges.providers.base import ProviderConfig, make_provider
from judges.spec import build_judge
from samples.canonical import canonical_json
from samples.errors import InputError
from tests.judges.units import escalate_unit


def test_key_is_sha256_of_the_canonical_request() -> None:
    request = {"provider": "openai", "model": "m", "body": {"messages": [{"role": "user", "content": "héllo"}]}}
    assert request_key(request) == hashlib.sha256(canonical_json(request)).hexdigest()
    assert request_key(dict(reversed(list(request.items())))) == request_key(request)


@functools.cache
def _local(api: str):
    judge = build_judge({"prompt": "ise-identify", "provider": "local", "model": "smollm2", "api": api,
                         "base_url": "http://127.0.0.1:9", "params": {"max_tokens": 16}})
    return judge, make_provider("local", judge.connection)


@settings(max_examples=100, deadline=None)
@given(text=st.text(), api=st.sampled_from(["openai", "anthropic"]), k=st.integers(0, 3))
def test_fast_keys_equal_the_canonical_key(text: str, api: str, k: int) -> None:
    judge, provider = _local(api)
    unit = escalate_unit()
    build = dict(model=judge.model, system=judge.prompt.system, params=judge.params, output_kind=judge.output,
                 sample_index=k, unit=unit)
    keyer = RequestKeyer(provider.build_request(user=RequestKeyer.placeholder, **build))
    assert keyer.key(text) == request_key(provider.build_request(user=text, **build))


def test_migrations_are_recorded_once_and_rows_survive_reopening(tmp_path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = RequestCache(path)
    cache.put("k1", {"a": 1}, {"choices": []})
    cache.close()
    cache = RequestCache(path)
    assert cache.get_many(["k1", "k2"]) == {"k1": {"choices": []}}
    cache.close()
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT name FROM migrations")] == [name for name, _ in MIGRATIONS]


def test_provider_config_is_not_part_of_the_key() -> None:
    # The same request to the same model at another address is the same cached answer.
    a = make_provider("openai", ProviderConfig(base_url="http://127.0.0.1:1/v1"))
    b = make_provider("openai", ProviderConfig(base_url="http://127.0.0.1:2/v1", timeout_s=5))
    build = dict(model="m", system="s", user="u", params={}, output_kind="yes_no", sample_index=0, unit=escalate_unit())
    assert request_key(a.build_request(**build)) == request_key(b.build_request(**build))


def test_a_corrupt_file_is_refused_by_name_and_left_as_it_was(tmp_path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(InputError) as caught:
        RequestCache(path)
    assert str(caught.value) == (f"{path}: not an accord request cache: file is not a database; "
                                 "move it away to start a new cache")
    assert path.read_bytes() == b"not a database" * 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache.sqlite"]


def test_another_programs_database_is_refused_before_anything_is_written(tmp_path) -> None:
    path = tmp_path / "cache.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('keep me')")
    db.close()
    before = path.read_bytes()
    with pytest.raises(InputError, match=r"not an accord request cache: a SQLite database with other tables \(notes\)"):
        RequestCache(path)
    assert path.read_bytes() == before
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["notes"]
    db.close()


@pytest.mark.slow  # 11 s on 2 idle cores: make test runs it, make test-fast does not
def test_processes_opening_a_new_cache_at_once_all_open_it_and_migrate_once(tmp_path) -> None:
    """Two judge runs on a fresh study open its cache together: neither may meet "database is locked"
    (SQLite refuses a concurrent switch to WAL without waiting) and each migration is applied once."""
    import os
    import subprocess
    import sys

    # Each opener says it is imported and ready, then blocks on one pipe they all share; closing its write
    # end wakes all six at once (no fixed sleep, no polling), so they open the cache together.
    opener = ("import sys\n"
              "from judges.cache import RequestCache\n"
              "print('ready', flush=True)\n"
              "sys.stdin.read()\n"
              "RequestCache(sys.argv[1]).close()\n")
    for round_ in range(5):
        path = tmp_path / f"cache{round_}.sqlite"
        go_read, go_write = os.pipe()
        openers = [subprocess.Popen([sys.executable, "-c", opener, str(path)], stdin=go_read, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(6)]
        os.close(go_read)
        ready = [p.stdout.readline() for p in openers]
        os.close(go_write)
        errors = [p.communicate(timeout=120)[1] for p in openers]
        assert ready == ["ready\n"] * 6, errors
        assert [p.returncode for p in openers] == [0] * 6, errors
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT name FROM migrations").fetchall() == [(name,) for name, _ in MIGRATIONS]
            assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
