"""The demo study's data fixture: EHQ-3000 items, controlled conflicts, a minimal agent, a simulated panel.

A demo fixture, not a product feature: it exists so `make demo` can run a whole
judge-validation study on real items and real local models without people.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # where each public name lives: type checkers read it, lazy_exports imports it on first use
    from apps.demo.agent import DEMO_MODELS, AgentConfig, DemoModel, RunReport, closed_book_answers, run_agent
    from apps.demo.conflict import ConflictInstance, build_instances, build_pair
    from apps.demo.fixture import FIXTURE_DIR, build_fixture, load_instances, load_items
    from apps.demo.items import DemoItem, eligible_items, load_ehq, select_demo_items
    from apps.demo.panel import (
        DEFAULT_PANEL,
        SIMULATED_NOTICE,
        PanelReport,
        SimulatedAnnotator,
        latent_label,
        run_panel,
        simulate_label,
    )
else:
    from samples import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__)

__all__ = [
    # apps.demo.agent: A minimal search-tool agent and closed-book answers: the demo's model outputs
    "AgentConfig",
    "DEMO_MODELS",
    "DemoModel",
    "RunReport",
    "closed_book_answers",
    "run_agent",
    # apps.demo.conflict: Controlled knowledge conflict, built as the ISE paper builds it (section 2.1)
    "ConflictInstance",
    "build_instances",
    "build_pair",
    # apps.demo.fixture: Build the shipped fixture folder ``data/demo/``: items, conflict/control instances, manifest
    "FIXTURE_DIR",
    "build_fixture",
    "load_instances",
    "load_items",
    # apps.demo.items: Demo items: real EHQ-3000 questions, stratified across its four categories
    "DemoItem",
    "eligible_items",
    "load_ehq",
    "select_demo_items",
    # apps.demo.panel: A simulated three-annotator panel: seeded labels submitted through the coding app's store
    "DEFAULT_PANEL",
    "PanelReport",
    "SIMULATED_NOTICE",
    "SimulatedAnnotator",
    "latent_label",
    "run_panel",
    "simulate_label",
]
