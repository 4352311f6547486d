"""A writer process for the concurrency tests: submits through the store API, acknowledging each commit.

Run as ``python -m tests.annotate.writer STORE TOKEN TASK_PREFIX N ACK_FILE [GO_FILE]``; after
each committed submit it appends the submission id to ACK_FILE (flushed), so a test that
SIGKILLs the writer knows exactly which labels were committed. With GO_FILE it creates ACK_FILE,
then waits for GO_FILE to exist before its first submit, so writers started one after another
on a busy machine all submit at once.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from annotate.store import Store


def main(store_path: str, token: str, task_prefix: str, count: int, ack_path: str, go_path: str | None = None) -> None:
    store = Store.open(store_path)
    name = store.authenticate(token).name
    with open(ack_path, "a", encoding="utf-8") as ack:
        while go_path is not None and not Path(go_path).exists():
            time.sleep(0.01)
        for i in range(count):
            submission_id = f"{name}-{i:06d}"
            store.submit(token, f"{task_prefix}{i:06d}", "yes" if i % 3 else "no", submission_id=submission_id, seconds_spent=1.0)
            ack.write(submission_id + "\n")
            ack.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], *sys.argv[6:7])
