"""A truncated response in Label Studio (a real 1.23.2 server): the task's data carries the flag and what the
annotator reads (the HyperText ``display``) carries the notice above the response; a finished response carries
neither. The tasks are cut from responses records by the real adapter and blinded by the project's function."""

from __future__ import annotations

import json

import pytest

from annotate.labelstudio import load_labelstudio_credentials
from samples.blind import blind
from samples.ingest import ingest
from samples.records import SampledUnit
from tests.annotate.test_labelstudio import _http, _push, _state, _write_study
from tests.annotate.test_truncation_browser import RECORDS

pytestmark = pytest.mark.labelstudio


def test_task_data_carries_the_flag_and_the_view_shows_it(labelstudio_server, tmp_path):
    source = tmp_path / "responses.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    ingest([source], tmp_path / "population", adapter="responses", kinds=["response"])
    units = [SampledUnit(**json.loads(line), stratum="all", inclusion_prob=1.0)
             for line in (tmp_path / "population" / "units.jsonl").read_text().splitlines()]
    tasks = blind(units, annotators=["ann-a"], salt=b"s" * 32).tasks
    cut = next(t for t in tasks if t.truncation)
    whole = next(t for t in tasks if not t.truncation)
    study = _write_study(tmp_path / "study", tasks, {"ann-a": [t.task_id for t in tasks]})
    _push(labelstudio_server, study)
    ids = _state(study)["annotators"]["ann-a"]["projects"]["response"]["tasks"]
    annotator = _http(labelstudio_server, load_labelstudio_credentials(study).annotators["ann-a"].api_token)
    seen = {tid: annotator.get(f"/api/tasks/{ids[tid]}").json()["data"] for tid in ids}
    reason = "the model hit its token budget (finish_reason 'length')"
    assert seen[cut.task_id]["truncated"] == reason
    display = seen[cut.task_id]["display"]
    assert "This response was truncated" in display
    assert "This response was cut off before it finished: the model hit its token budget (finish_reason &#x27;length&#x27;)." in display
    assert display.index("This response was truncated") < display.index("It was written by the Irish author &lt;i&gt;James&lt;/i&gt;")
    assert "<i>James" not in display
    assert set(seen[whole.task_id]) == {"task_id", "display"} and "truncated" not in seen[whole.task_id]["display"]
