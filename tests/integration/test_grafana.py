"""grafana/tcpfr-dashboard.json: every URL its Infinity queries use answers, in the shape the
panel's columns read (CSV with a `t` column of epoch milliseconds, or JSON under the root
selector), against a real run."""

from __future__ import annotations

import csv
import io
import json
import random
from datetime import datetime
from typing import Any

from servicekit import ROOT, Stack

DASHBOARD = ROOT / "grafana" / "tcpfr-dashboard.json"
INFINITY = "yesoreyeram-infinity-datasource"


def targets(dashboard: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = [(p["title"], t) for p in dashboard["panels"] for t in p.get("targets", [])]
    for var in dashboard["templating"]["list"]:
        query = var.get("query")
        if isinstance(query, dict) and "infinityQuery" in query:
            found.append((f"variable {var['name']}", query["infinityQuery"]))
    return found


def fill(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
    assert "${" not in text, text
    return text


def select(doc: Any, path: str) -> list[dict[str, Any]]:
    for part in filter(None, path.split(".")):
        doc = doc[part]
    return doc if isinstance(doc, list) else [doc]


def test_every_dashboard_query_answers_in_its_panels_shape(pg_stack: Stack) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    with pg_stack.client as client:
        resp = client.post(
            "/v1/runs", json={"preset": "riverbed-drops-reno", "seed": random.randrange(1, 2**31)}
        )
        assert resp.status_code in (201, 202), resp.text
    run = pg_stack.wait_run(resp.json()["id"])
    assert run["status"] == "succeeded", run
    origin_ms = datetime.fromisoformat(run["started_at"]).timestamp() * 1000
    end_ms = origin_ms + run["summary"]["sim_time"] * 1000
    # The variables' defaults (flow backup, link access1.branch>cloud), the API and the run.
    values = {
        var["name"]: str(var.get("query"))
        for var in dashboard["templating"]["list"]
        if var["type"] == "textbox"
    }
    values.update(api=pg_stack.base_url, run=run["id"])
    queries = targets(dashboard)
    assert len(queries) >= 7
    # The window panel shows what its title says: cwnd, ssthresh (after the first loss:
    # this preset has drops) and the bytes in flight.
    window = next(t for title, t in queries if title.startswith("Congestion window"))
    assert [c["text"] for c in window["columns"]] == ["time", "cwnd", "ssthresh", "in flight"]
    with pg_stack.client as client:
        for title, target in queries:
            assert target["datasource"]["type"] == INFINITY and target["source"] == "url"
            url = fill(target["url"], values)
            assert url.startswith(pg_stack.base_url + "/v1/"), (title, url)
            resp = client.get(url)
            assert resp.status_code == 200, (title, url, resp.text)
            columns = [fill(c["selector"], values) for c in target["columns"]]
            if target["type"] == "csv":
                assert resp.headers["content-type"].startswith("text/csv"), title
                rows = list(csv.DictReader(io.StringIO(resp.text)))
                assert len(rows) > 100, (title, resp.text[:200])
                assert set(columns) <= set(rows[0]), (title, columns, list(rows[0]))
                kinds = {fill(c["selector"], values): c["type"] for c in target["columns"]}
                for name, kind in kinds.items():
                    cells = [r[name] for r in rows if r[name] != ""]
                    assert cells, (title, name)
                    numbers = [float(x) for x in cells]
                    if kind == "timestamp_epoch":
                        # Epoch ms within the run's own span: the panel plots at the run's date.
                        assert numbers == sorted(numbers), title
                        assert origin_ms - 1 <= numbers[0] and numbers[-1] <= end_ms + 1, title
            else:
                assert target["type"] == "json"
                rows_ = select(resp.json(), fill(target["root_selector"], values))
                assert rows_, (title, resp.text[:200])
                for row in rows_:
                    assert all(c in row for c in columns), (title, columns, row)
                if title == "variable run":
                    assert run["id"] in {r["id"] for r in rows_}
