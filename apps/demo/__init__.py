"""The demo study's data fixture: EHQ-3000 items, controlled conflicts, a minimal agent, a simulated panel.

A demo fixture, not a product feature: it exists so `make demo` can run a whole
judge-validation study on real items and real local models without people.
"""

from __future__ import annotations

from samples.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "DemoItem": "apps.demo.items",
    "load_ehq": "apps.demo.items",
    "eligible_items": "apps.demo.items",
    "select_demo_items": "apps.demo.items",
    "ConflictInstance": "apps.demo.conflict",
    "build_pair": "apps.demo.conflict",
    "build_instances": "apps.demo.conflict",
    "DemoModel": "apps.demo.agent",
    "DEMO_MODELS": "apps.demo.agent",
    "AgentConfig": "apps.demo.agent",
    "RunReport": "apps.demo.agent",
    "run_agent": "apps.demo.agent",
    "closed_book_answers": "apps.demo.agent",
    "SimulatedAnnotator": "apps.demo.panel",
    "DEFAULT_PANEL": "apps.demo.panel",
    "SIMULATED_NOTICE": "apps.demo.panel",
    "PanelReport": "apps.demo.panel",
    "latent_label": "apps.demo.panel",
    "simulate_label": "apps.demo.panel",
    "run_panel": "apps.demo.panel",
    "build_fixture": "apps.demo.fixture",
    "FIXTURE_DIR": "apps.demo.fixture",
    "load_items": "apps.demo.fixture",
    "load_instances": "apps.demo.fixture",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports("apps.demo", _EXPORTS)
