"""pydantic core schemas kept between runs beside pi's bytecode.

Generating a validator's core schema is pure Python (for the session entries pydantic
walks 27 model classes: about 18 ms, a twelfth of resuming a 20,000-entry session; for
``models.json`` about 2 ms of every start); building a validator from a ready schema
takes well under a millisecond. So a schema, once generated, is pickled next to the
bytecode Python caches for the module that uses it (the same folder, ``__pycache__`` or
``sys.pycache_prefix``, with the same trust: Python runs the ``.pyc`` files found there)
and read back by later runs. Users: the session entries' fast validators
(``pi_core.session.records``) and the ``models.json`` validator (``pi_core.ai.config``).

The file is named after a digest of everything the schema depends on — the Python,
pydantic and pydantic-core versions, and the size and modification time of every
source file of the contract package and of the module that uses it — and holds that
description too, compared on reading: a changed model is never validated with an old
schema. A file that is missing, unreadable, someone else's, or describes other sources
is ignored (the schema is generated again, and written unless
``sys.dont_write_bytecode``); nothing here ever fails a run.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
from collections.abc import Callable
from typing import Any

import pi_hookspecs

_FORMAT = 1


def _stat_line(source: str) -> str:
    try:
        stat = os.stat(source)
    except OSError:
        return f"{source} missing"
    return f"{source} {stat.st_size} {stat.st_mtime_ns}"


@functools.cache
def _fixed_lines() -> tuple[str, ...]:
    """The versions and the contract's sources, described once per process (a run
    reading several kept schemas does not stat the contract's files for each)."""
    import pydantic
    import pydantic_core

    package = os.path.dirname(os.path.abspath(pi_hookspecs.__file__))
    try:
        names = sorted(entry.name for entry in os.scandir(package) if entry.name.endswith(".py"))
    except OSError:
        names = []
    versions = [
        f"format {_FORMAT}",
        sys.version,
        f"pydantic {pydantic.VERSION}",
        f"pydantic-core {pydantic_core.__version__}",
    ]
    return (*versions, *(_stat_line(os.path.join(package, name)) for name in names))


def _description(module_file: str) -> str:
    """What a schema kept for ``module_file`` depends on, as the text its file holds."""
    return "\n".join((*_fixed_lines(), _stat_line(os.path.abspath(module_file))))


def _cache_file(module_file: str, description: str, name: str) -> str | None:
    import importlib.util

    try:
        bytecode = importlib.util.cache_from_source(os.path.abspath(module_file))
    except (NotImplementedError, ValueError):  # no bytecode caching in this interpreter
        return None
    digest = hashlib.sha256(description.encode()).hexdigest()[:20]
    return os.path.join(os.path.dirname(bytecode), f"pi-{name}-schema.{digest}.pickle")


def cached_schema(module_file: str, generate: Callable[[], Any], name: str = "entry") -> Any:
    """The schema ``name`` cached for ``module_file`` (the module that builds it) and the
    contract's current sources, else ``generate()`` (then cached for the next run)."""
    description = _description(module_file)
    path = _cache_file(module_file, description, name)
    if path is not None:
        schema = _read(path, description)
        if schema is not None:
            return schema
    schema = generate()
    if path is not None and not sys.dont_write_bytecode:
        _write(path, description, schema)
    return schema


def _read(path: str, description: str) -> Any:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        stat = os.fstat(fd)
        if hasattr(os, "getuid") and stat.st_uid != os.getuid():
            return None  # not written by this user: not unpickled
        with os.fdopen(fd, "rb", closefd=False) as handle:
            import pickle

            stored = pickle.load(handle)
    except Exception:  # a stale or damaged cache is only a missed shortcut
        return None
    finally:
        os.close(fd)
    if not isinstance(stored, tuple) or len(stored) != 2 or stored[0] != description:
        return None
    return stored[1]


def _write(path: str, description: str, schema: Any) -> None:
    import pickle

    try:
        data = pickle.dumps((description, schema), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # a schema holding something unpicklable is not cached
        return
    directory = os.path.dirname(path)
    temporary = f"{path}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        os.makedirs(directory, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return
        name = os.path.basename(path)
        prefix = name.split(".", 1)[0] + "."
        for entry in os.scandir(directory):  # the schemas of earlier sources
            if entry.name.startswith(prefix) and entry.name.endswith(".pickle") and entry.name != name:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


_validators: dict[tuple[type, str], Any] = {}


def model_validator(model: type, module_file: str, name: str) -> Any:
    """A ``SchemaValidator`` of the pydantic ``model`` (its ``validate_python`` gives what
    ``model.model_validate`` gives, errors included), built from the schema kept for
    ``module_file`` under ``name``; one per process."""
    key = (model, name)
    found = _validators.get(key)
    if found is None:
        from pydantic_core import SchemaValidator

        def generate() -> Any:
            model.model_rebuild()  # type: ignore[attr-defined]
            return model.__pydantic_core_schema__  # type: ignore[attr-defined]

        try:
            found = SchemaValidator(cached_schema(module_file, generate, name=name))
        except Exception:  # a cached schema this pydantic-core refuses: generate it again
            found = SchemaValidator(generate())
        _validators[key] = found
    return found


_serializers: dict[type, Any] = {}
_SELF_CONTAINED = frozenset({"pi_core.runtime.events"})
"""pi_core modules whose models depend on the contract alone (their kept schema's
description covers everything it depends on)."""


def model_json(model: Any) -> Any:
    """``model.to_json()`` — ``model_dump(mode="json", by_alias=True)`` — by a serializer
    built from the schema kept for the model's class (beside its module's bytecode), so
    the JSON of events and session entries does not make pydantic generate each class's
    schema on every run. Objects that are not pydantic models are returned as they are."""
    cls = type(model)
    serializer = _serializers.get(cls)
    if serializer is None:
        if not hasattr(cls, "__pydantic_fields__"):
            return model
        serializer = _serializers[cls] = _serializer(cls)
    return serializer.to_python(model, mode="json", by_alias=True)


def _serializer(cls: Any) -> Any:
    from pydantic_core import SchemaSerializer

    def generate() -> Any:
        cls.model_rebuild()
        return cls.__pydantic_core_schema__

    module = sys.modules.get(cls.__module__)
    source = getattr(module, "__file__", None)
    if not source or (cls.__module__.split(".")[0] != "pi_hookspecs" and cls.__module__ not in _SELF_CONTAINED):
        # a kept schema is described by the contract's sources and its own module's: other
        # classes (a plugin's, which may depend on more of its modules) use their own
        return cls.__pydantic_serializer__
    try:
        return SchemaSerializer(cached_schema(source, generate, name=f"json-{cls.__qualname__}"))
    except Exception:  # a cached schema this pydantic-core refuses: the class's own serializer
        return cls.__pydantic_serializer__
