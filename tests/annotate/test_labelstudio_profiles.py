"""Label Studio profiles on the servers accord starts (issue #23): a user changes only their own.

Stock 1.23.2 lets any user ``PATCH /api/users/{id}`` of anyone their organisation lists, the
admin's profile included (200: username, names, phone changed). With accord's settings
(``scripts/labelstudio_hardening``) two annotators' tokens each change their own profile and
neither another annotator's nor the admin's, by any spelling of the route.
"""

from __future__ import annotations

import pytest

from annotate.labelstudio import load_labelstudio_credentials
from tests.annotate.test_labelstudio import TASKS, _http, _push, _write_study


@pytest.mark.labelstudio
def test_an_annotator_changes_only_their_own_profile(labelstudio_server, tmp_path):
    study = _write_study(tmp_path / "profiles", TASKS[2:3], {"one": ["t_esc"], "two": ["t_esc"]})
    _push(labelstudio_server, study)
    credentials = load_labelstudio_credentials(study)
    admin = _http(labelstudio_server, labelstudio_server.token)
    clients = {name: _http(labelstudio_server, credentials.annotators[name].api_token) for name in ("one", "two")}
    ids = {name: credentials.annotators[name].user_id for name in clients}
    ids["admin"] = admin.get("/api/current-user/whoami").json()["id"]
    before = {who: admin.get(f"/api/users/{user}").json() for who, user in ids.items() if who == "admin"}
    for name, client in clients.items():
        own = client.patch(f"/api/users/{ids[name]}/", json={"first_name": f"{name}-renamed"})
        assert own.status_code == 200 and own.json()["first_name"] == f"{name}-renamed"
        for other in (o for o in ids if o != name):
            for path in (f"/api/users/{ids[other]}/", f"/api/users/{ids[other]}", f"/api/users/{ids[other]}.json",
                         f"/api/users/{ids[other]}.json/"):
                changed = client.patch(path, json={"username": f"owned-by-{name}", "first_name": "x", "phone": "1"})
                assert changed.status_code in (403, 404, 405), (name, other, path, changed.status_code, changed.text)
    for name in clients:  # nobody changed anybody else
        me = clients[name].get("/api/current-user/whoami").json()
        assert me["first_name"] == f"{name}-renamed" and not me["username"].startswith("owned-by")
    after = admin.get(f"/api/users/{ids['admin']}").json()
    assert {k: after[k] for k in ("username", "first_name", "last_name", "phone")} == \
        {k: before["admin"][k] for k in ("username", "first_name", "last_name", "phone")}
