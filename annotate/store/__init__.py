"""The coding app's store: annotators, blinded tasks, orders and labels.

One store per study, on one of two engines (``annotate.engines``): a SQLite file
(``STUDY/labels/store.sqlite``, WAL, the embedded default: the Streamlit app, the CLI
and simulated panels read while one writer commits), or a schema of a PostgreSQL
database that several app servers share. ``store_location`` says which (the
``ACCORD_STORE_URL`` environment variable, else the study file's ``[annotation]
options.store``, else the file). Every submit is one write transaction that appends a
revision to ``submissions`` (the full history) and upserts the current row of
``labels`` (the latest revision counts). A submit is idempotent by its submission id: a double click, a browser
retry or a reload that sends the same id never adds a row. The schema evolves
only through the append-only, named migrations (``schema``).

An annotator added after blinding gets, when the tasks are loaded, the order
``accord blind`` would have given that name (``samples.blind.annotator_order``
seeded by the blinding seed and the name): deterministic, no re-blinding, and
nobody else's order changes.

The modules: ``schema`` (migrations, tables), ``study`` (where a study's store is, its settings, the
blinding seed), ``core`` (``Store``), ``access`` (the checks inside a transaction), ``rows`` (what reads
return), ``store_copy`` (``copy_store``).
"""

from __future__ import annotations

from annotate.store.access import hash_token
from annotate.store.core import Store
from annotate.store.rows import Annotator, LoadReport, Revision, SubmitResult, TableFingerprint
from annotate.store.schema import MIGRATIONS, TABLES
from annotate.store.store_copy import copy_store
from annotate.store.study import STORE_URL_ENV, AppSettings, blinding_seed, store_location, with_study_schema

__all__ = ["MIGRATIONS", "STORE_URL_ENV", "TABLES", "Annotator", "AppSettings", "LoadReport", "Revision", "Store",
           "SubmitResult", "TableFingerprint", "blinding_seed", "copy_store", "hash_token", "store_location",
           "with_study_schema"]
