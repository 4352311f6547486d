"""Build the shipped fixture folder ``data/demo/``: items, conflict/control instances, manifest.

``python -m apps.demo.fixture [OUT]`` rewrites it; the same arguments give
byte-identical files (a test rebuilds it and compares). Model outputs are not
shipped: the demo produces them with the local models (``apps.demo.agent``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from apps.demo.conflict import ConflictInstance, build_instances
from apps.demo.items import (
    CATEGORIES,
    DEFAULT_PER_CATEGORY,
    DEFAULT_SEED,
    EHQ_CITATION,
    DemoItem,
    eligibility_report,
    load_ehq,
    select_demo_items,
)
from samples import read_models, sha256_hex, write_json, write_jsonl

REPO = Path(__file__).resolve().parents[2]
FIXTURE_DIR = REPO / "data" / "demo"
ITEMS_FILE = "items.jsonl"
INSTANCES_FILE = "instances.jsonl"
MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True, kw_only=True)
class FixtureFiles:
    items: Path
    instances: Path
    manifest: Path


def build_fixture(out_dir: str | Path = FIXTURE_DIR, *, per_category: int = DEFAULT_PER_CATEGORY,
                  seed: int = DEFAULT_SEED) -> FixtureFiles:
    """Select the items, build their conflict/control pairs and write the three files."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dataset = load_ehq()
    items = select_demo_items(per_category=per_category, seed=seed, items=dataset)
    instances = build_instances(items, seed=seed)
    files = FixtureFiles(items=out / ITEMS_FILE, instances=out / INSTANCES_FILE, manifest=out / MANIFEST_FILE)
    write_jsonl(files.items, items)
    write_jsonl(files.instances, instances)
    write_json(files.manifest, {
        "source": EHQ_CITATION,
        "licence": "CC BY 4.0",
        "ehq_version": version("ehq"),
        "seed": seed,
        "per_category": per_category,
        "categories": list(CATEGORIES),
        "n_items": len(items),
        "n_instances": len(instances),
        "question_ids": [item.question_id for item in items],
        "items_sha256": sha256_hex([item.model_dump(mode="json") for item in items]),
        "eligibility": {category: dict(sorted(counts.items())) for category, counts in
                        sorted(eligibility_report(dataset).items())},
        "perturbations": {i.instance_id: i.perturbation for i in instances if i.perturbation},
    })
    return files


def load_items(path: str | Path = FIXTURE_DIR / ITEMS_FILE) -> list[DemoItem]:
    """The shipped (or a rebuilt) ``items.jsonl``; a bad row stops with file, line and field."""
    return list(read_models(path, DemoItem))


def load_instances(path: str | Path = FIXTURE_DIR / INSTANCES_FILE) -> list[ConflictInstance]:
    """The shipped (or a rebuilt) ``instances.jsonl``."""
    return list(read_models(path, ConflictInstance))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    files = build_fixture(args[0] if args else FIXTURE_DIR)
    print(f"wrote {files.items}, {files.instances}, {files.manifest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
