"""The Label Studio backend: one organisation per annotator, owner accounts, idempotent push and lossless pull.

Open-source Label Studio has no roles, task assignment, per-item overlap or
agreement, and inside one organisation every member can list and open every
project. accord therefore gives every annotator an organisation of their own
(holding one project per unit kind, the tasks imported in that annotator's order
for sequential sampling) with two members: the annotator's account and an owner
account through which the study pushes and pulls. Accounts, organisations and
memberships are made in Label Studio's own user management for superusers, its
Django admin pages (``/admin/``), signed in as the server's admin account; the
invite link cannot do it (every signup joins the first organisation).

Label Studio 1.23.2 lets a signed-in user open objects of any organisation they
are not a revoked member of (``Project.has_permission`` rejects only revoked
memberships). Push therefore seals every organisation it makes: every other user
of the server gets a revoked membership in it, and every annotator gets a revoked
membership in every other organisation. Stock 1.23.2 also lets a user edit their
own ``active_organization`` through the API, after which the project list and
``/api/tasks/{id}/annotations/`` of that organisation are open to them, and shows
any task's drafts to anyone; the servers ``scripts/labelstudio.sh`` starts close
both (``scripts/labelstudio_hardening``). README ("Label Studio blinding") says
what holds on a server accord did not start.
Tasks carry only the opaque task id and the scrubbed display payload; judge labels
are never imported as predictions.

Files in the study folder (``StudyLayout``; all rewritten atomically):

- ``labelstudio_state``: server URL, the scheme of each kind, the revoked
  memberships made, and per annotator the user ids, organisation and, per kind,
  the project id and task mapping (accord task id -> Label Studio task id).
- ``labelstudio_credentials`` (mode 0600): each annotator's login (email,
  password, API token, login URL) to hand out, and each organisation owner's login
  and API token, which push, pull and status use.
- ``labelstudio_labels``: the pulled ``HumanLabel`` table (backend
  ``labelstudio``), one row per (task, annotator), the latest edit; the same
  columns and row order as the coding app's export.

The modules: ``server`` (reaching the server, its admin pages), ``state`` (the files above),
``labels`` (labeling configs, task payloads, annotations read back as labels), ``backend``
(the registered ``labelstudio`` backend).
"""

from __future__ import annotations

from annotate.labelstudio.backend import LabelStudioBackend
from annotate.labelstudio.labels import display_payload, labeling_config
from annotate.labelstudio.server import ADMIN_PASSWORD_ENV, DEFAULT_URL, TOKEN_ENV, URL_ENV, LabelStudioSettings
from annotate.labelstudio.state import (
    CredentialsFile,
    LabelStudioPullReport,
    LabelStudioState,
    load_labelstudio_credentials,
    load_labelstudio_state,
)

__all__ = ["ADMIN_PASSWORD_ENV", "DEFAULT_URL", "TOKEN_ENV", "URL_ENV", "CredentialsFile", "LabelStudioBackend",
           "LabelStudioPullReport", "LabelStudioSettings", "LabelStudioState", "display_payload", "labeling_config",
           "load_labelstudio_credentials", "load_labelstudio_state"]
