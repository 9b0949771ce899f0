"""docs/scenario.md cannot drift from the models: its reference is what the generator
writes from them today, and every field of every model a client sends or reads has a
description there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine import docs
from engine.result import Result
from engine.scenario import Scenario
from engine.study import StudySpec

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_is_current() -> None:
    text = docs.DOC.read_text()
    assert docs.BEGIN in text and docs.END in text
    assert docs.render(text) == text, "docs/scenario.md is stale: python -m engine.docs --write"


def test_every_field_is_documented() -> None:
    assert docs.undocumented() == []
    text = docs.DOC.read_text().split(docs.BEGIN, 1)[1]
    for model in docs.models():
        section = text.split(f"### {model.__name__}\n", 1)[1].split("\n### ", 1)[0]
        for name in model.model_fields:
            assert f"| `{name}` |" in section, f"{model.__name__}.{name} is not in the doc"


def test_every_model_a_client_meets_is_in_the_doc() -> None:
    names = {m.__name__ for m in docs.models()}
    for root in (Scenario, StudySpec, Result):
        assert root.__name__ in names
    for expected in ("TcpSpec", "Pvc", "LossSpec", "QueueSpec", "TcpFlowSummary", "Series"):
        assert expected in names


def test_the_readme_links_the_doc_and_nothing_outside_the_repository() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docs/scenario.md" in readme
    assert not re.search(r"\]\(\.\./|`\.\./", readme), "README points outside the repository"
