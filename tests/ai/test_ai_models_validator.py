"""The models.json validator is built from a core schema kept between runs
(pi_core._schema_cache): it gives ModelsFile.model_validate's models and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from pydantic import ValidationError

from pi_core.ai import config

CASES: list[dict[str, Any]] = [
    {
        "providers": {
            "x": {"baseUrl": "http://a", "api": "openai-completions", "models": [{"id": "m", "contextWindow": -1}]}
        }
    },
    {"providers": {"x": {"models": [{"id": ""}], "bogus": 1}}},
    {"providers": "no"},
    {
        "$schema": "s",
        "providers": {
            "x": {
                "baseUrl": "http://a",
                "models": [{"id": "m", "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}],
            }
        },
    },
    {"providers": {"y": {"modelOverrides": {"m": {"reasoning": True, "thinkingLevelMap": {"high": "max"}}}}}},
]


def _outcome(validate: Any, data: dict[str, Any]) -> Any:
    try:
        return validate(data)
    except ValidationError as error:
        return (error.title, error.errors(include_url=False), str(error))


@pytest.mark.parametrize("data", CASES)
def test_same_models_and_errors_as_model_validate(data: dict[str, Any]) -> None:
    assert _outcome(config._validate, data) == _outcome(config.ModelsFile.model_validate, data)


def test_a_later_run_does_not_generate_the_schema(tmp_path: Any) -> None:
    code = (
        "import pydantic._internal._model_construction as mc\n"
        "built = []\nreal = mc.complete_model_class\n"
        "mc.complete_model_class = lambda cls, *a, **k: (built.append(cls.__name__), real(cls, *a, **k))[1]\n"
        "from pi_core.ai import config\n"
        "config._validate({'providers': {'x': {'baseUrl': 'http://a', 'models': [{'id': 'm'}]}}})\n"
        "print(built)\n"
    )
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the cache is written where bytecode is
    runs = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert runs[0].strip() == "['ModelsFile']"  # generated, then kept
    assert runs[1].strip() == "[]"  # read back: pydantic generated nothing


MODEL_CASES: list[dict[str, Any]] = [
    {"id": "m", "provider": "p", "api": "openai-completions", "name": "M", "cost": {"input": 3, "output": 15}},
    {"id": "m", "provider": "p", "api": "anthropic-messages", "name": "M", "contextWindow": "big"},
    {
        "id": "m",
        "provider": "p",
        "api": "x",
        "name": "M",
        "input": ["text", "image"],
        "headers": {"a": "b"},
        "compat": {"z": 1},
    },
]


@pytest.mark.parametrize("data", MODEL_CASES)
def test_the_registrys_model_validator_is_model_validate(data: dict[str, Any]) -> None:
    from pi_core import _schema_cache
    from pi_core.ai import registry
    from pi_hookspecs import Model

    ours = _schema_cache.model_validator(Model, registry.__file__, "model").validate_python
    assert _outcome(ours, data) == _outcome(Model.model_validate, data)
