"""Where a run's uncached calls are answered: the engine extension point (a Protocol and a registry).

The runner decides *what* to call (fingerprints, cache look-ups, resume) and owns *how a
finished call is recorded* (``judges.runner.RunContext.record``: cache first, then the
label log), so every engine gives the same guarantees. An engine only decides where the
calls run: ``local`` is the runner's own asyncio loop, ``ray`` sends them to a Ray
cluster (``judges.ray_engine``). A judge names its engine in its ``[[judge]]`` table
(``engine = "ray"`` plus a ``[judge.ray]`` table of options); the engine is not part
of the fingerprint or the cache key: the same request answered anywhere is the same
answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from samples import Registry

# The engines sit below the runner and the judge spec that use them, so their types are named, not imported:
# JudgeSpec is ``judges.spec.JudgeSpec``; a task and the run context are ``judges.runner._Task`` and ``RunContext``.


DEFAULT_ENGINE = "local"
"""The engine of a judge that names none: the runner's own loop in this process."""


@runtime_checkable
class Engine(Protocol):
    name: str
    remote: bool
    """Whether calls are answered outside this process (a ``[judge.<name>]`` options table configures where);
    a provider that answers in process (``ProviderKind.in_process``) is never sent there."""
    flags: Mapping[str, str]
    """``accord judge run`` flags (argparse dest) that set keys of this engine's options table, dest -> key."""

    def options(self, where: str, table: Mapping[str, Any]) -> Any:
        """The engine's validated options from a judge's ``[judge.<name>]`` table (no heavy import)."""
        ...

    def check(self, judges: Sequence[Any]) -> None:
        """Refuse (InputError) before anything is written when the engine cannot run these judges."""
        ...

    def describe(self, spec: Any) -> dict[str, Any]:
        """What the run log records about where this judge's calls went."""
        ...

    def call_all(self, pending: Sequence[tuple[Any, str]], run: Any) -> None:
        """Answer every (task, fingerprint), each through ``run.record`` exactly once."""
        ...


_REGISTRY: Registry[Engine] = Registry("engine", builtins=("judges.runner", "judges.ray_engine"))
"""The built-in engines' modules are imported by name on first use; each registers its engine on import."""


def register_engine(engine: Engine) -> None:
    if not isinstance(engine, Engine):  # a plugin written against an older protocol fails here, not mid-run
        raise TypeError(f"engine {engine!r} does not implement judges.engines.Engine "
                        "(name, remote, flags, options, check, describe, call_all)")
    _REGISTRY.register(engine.name, engine)


def engine_names() -> list[str]:
    return _REGISTRY.names()


def get_engine(name: str) -> Engine:
    return _REGISTRY.get_one(name)
