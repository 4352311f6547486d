"""Label Studio 1.23.2 settings for the servers accord starts: the stock ones, closing doors between organisations.

Stock 1.23.2 accepts any existing organisation id in ``PATCH /api/users/{own id}``;
the project list and a task's annotation list then filter by that organisation
alone, so one annotator could read another's labels: here ``active_organization``
is read-only (signing in picks it). Stock 1.23.2 also shows any task's drafts to
any user and an organisation's members to its revoked members: here neither
(``accord_labelstudio_urls``).
``scripts/labelstudio.sh start`` sets DJANGO_SETTINGS_MODULE to this module
(LS_HARDENED=0 starts the stock settings).
"""

# Label Studio's settings module reads django.conf.settings (SENTRY_DSN, ...) before it
# has finished importing, which re-reads this module half-imported: the base settings
# must be here first.
import os

from core.settings.base import *
from label_studio.core.settings.label_studio import *

USER_SERIALIZER_UPDATE = "accord_labelstudio_users.UserSerializerUpdate"
ROOT_URLCONF = "accord_labelstudio_urls"

# The test suite's servers only (tests/support/labelstudio.py sets it): Django's PBKDF2 takes about 0.26 CPU-s per
# password check, and each push signs accounts in (two per new annotator, one admin), about 30 CPU-s of a test run.
# MD5 is Django's documented hasher for test runs; it is no way to store a real person's password, so a server
# people use never sets this. PBKDF2 stays listed, so a password stored before still verifies.
if os.environ.get("ACCORD_LS_TEST_PASSWORD_HASHING") == "1":
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher",
                        "django.contrib.auth.hashers.PBKDF2PasswordHasher"]
