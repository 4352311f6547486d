"""The store's tables: append-only named migrations (the schema evolves only through them), and the tables
``copy_store`` and ``fingerprint`` compare with the key that orders their rows."""

from __future__ import annotations

# Append-only: never edit or reorder an applied migration; add a new named one.
MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "0001_initial",
        (
            """CREATE TABLE annotators (
                name TEXT PRIMARY KEY,
                role TEXT NOT NULL CHECK (role IN ('annotator', 'adjudicator')),
                token_hash TEXT UNIQUE,
                created_at TEXT NOT NULL,
                revoked_at TEXT
            )""",
            """CREATE TABLE tasks (
                task_id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                scheme TEXT NOT NULL,
                payload TEXT NOT NULL,
                loaded_at TEXT NOT NULL
            )""",
            """CREATE TABLE orders (
                annotator TEXT NOT NULL,
                position INTEGER NOT NULL,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                PRIMARY KEY (annotator, position),
                UNIQUE (annotator, task_id)
            )""",
            """CREATE TABLE submissions (
                seq {SEQ},
                submission_id TEXT NOT NULL UNIQUE,
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                annotator TEXT NOT NULL,
                role TEXT NOT NULL CHECK (role IN ('independent', 'adjudication')),
                label TEXT NOT NULL,
                first_turn INTEGER,
                unsure INTEGER NOT NULL,
                note TEXT NOT NULL,
                seconds_spent {FLOAT},
                backend TEXT NOT NULL,
                submitted_at TEXT NOT NULL
            )""",
            """CREATE TABLE labels (
                task_id TEXT NOT NULL REFERENCES tasks (task_id),
                annotator TEXT NOT NULL,
                role TEXT NOT NULL,
                label TEXT NOT NULL,
                first_turn INTEGER,
                unsure INTEGER NOT NULL,
                note TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                seconds_spent {FLOAT},
                backend TEXT NOT NULL,
                revisions INTEGER NOT NULL,
                last_seq INTEGER NOT NULL,
                PRIMARY KEY (task_id, annotator, role)
            )""",
            "CREATE INDEX submissions_by_owner ON submissions (annotator, task_id, role, seq)",
        ),
    ),
    (
        # The codebook version (sha256 of the codebook file shown) each revision was given
        # under; NULL where unknown (labels given before this migration, simulated panels).
        "0002_codebook_sha256",
        (
            "ALTER TABLE submissions ADD COLUMN codebook_sha256 TEXT",
            "ALTER TABLE labels ADD COLUMN codebook_sha256 TEXT",
        ),
    ),
    (
        # The qualification round: answers to practice units (annotate.gold), kept apart from
        # labels so that no export, progress count or agreement ever reads them.
        "0003_practice_answers",
        (
            """CREATE TABLE practice_answers (
                seq {SEQ},
                submission_id TEXT NOT NULL UNIQUE,
                task_id TEXT NOT NULL,
                annotator TEXT NOT NULL,
                label TEXT NOT NULL,
                first_turn INTEGER,
                unsure INTEGER NOT NULL,
                note TEXT NOT NULL,
                seconds_spent {FLOAT},
                correct INTEGER NOT NULL,
                submitted_at TEXT NOT NULL
            )""",
            "CREATE INDEX practice_by_owner ON practice_answers (annotator, task_id, seq)",
        ),
    ),
    (
        # Reload-proof sign-ins (apps.browser_sessions) in the store, so a browser signed in at
        # one app server stays signed in at another. Only the secret's hash is kept, tied to the
        # token hash it was opened with: rotating or revoking the token ends its sessions.
        "0004_browser_sessions",
        (
            """CREATE TABLE browser_sessions (
                secret_hash TEXT PRIMARY KEY,
                annotator TEXT NOT NULL REFERENCES annotators (name),
                token_hash TEXT NOT NULL,
                created_at TEXT NOT NULL,
                expires_at TEXT NOT NULL
            )""",
        ),
    ),
)


# The tables a copy moves and checks, each with the key its rows are ordered by (browser
# sessions are not moved: people sign in again on the new store).
TABLES: tuple[tuple[str, str], ...] = (
    ("annotators", "name"), ("tasks", "task_id"), ("orders", "annotator, position"), ("submissions", "seq"),
    ("labels", "task_id, annotator, role"), ("practice_answers", "seq"),
)
