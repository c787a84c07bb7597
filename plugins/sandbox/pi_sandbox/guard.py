"""After each command: the project's repository and ``.pi`` are as the command found them.

The mounts of bubblewrap keep the protected paths read-only and the repository folder
in place while a command runs. What a mount cannot express is checked once the command
has ended, before anything else runs (its processes are gone by then):

* **a repository that appeared** at the project's root (``git init``, or a ``.git``
  put there by hand): it may stay when it is one git would make — hooks only as
  ``*.sample``, a configuration of the keys :data:`SAFE_CONFIG` lists — else it is moved
  aside to ``.git.pi-sandbox-quarantine``, where git never looks;
* **the repository replaced** (``.git`` renamed, linked elsewhere, rewritten): the
  original is put back and the replacement moved aside;
* **a ``.pi`` folder that appeared**: it holds plugins and settings pi loads outside the
  sandbox, so it is moved aside (only the user creates it);
* with **Landlock**, which cannot keep a folder read-only inside a writable one, the
  protected files themselves (``.git/hooks``, ``.git/config``, ``.pi`` …) are saved before
  the command and restored when it changed them.

Each repair is returned as ``(target, what was done)`` for the tool result and the
``sandbox_violation`` event.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass, field

from .settings import Plan

QUARANTINE = ".pi-sandbox-quarantine"
MAX_SAVED_BYTES = 8 * 1024 * 1024
"""The most a Landlock snapshot of the protected paths holds; beyond it, what was not
saved is reported if it changes, not restored."""

SAFE_CONFIG: dict[str, frozenset[str]] = {
    "core": frozenset(
        {
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
            "autocrlf",
            "eol",
            "safecrlf",
            "quotepath",
            "compression",
            "bigfilethreshold",
            "sharedrepository",
            "longpaths",
        }
    ),
    "remote": frozenset({"url", "fetch", "pushurl", "push", "tagopt", "prune", "mirror"}),
    "branch": frozenset({"remote", "merge", "rebase", "pushremote", "description"}),
    "init": frozenset({"defaultbranch"}),
    "user": frozenset({"name", "email"}),
    "extensions": frozenset({"objectformat", "worktreeconfig", "refstorage", "preciousobjects", "partialclone"}),
    "gc": frozenset({"auto"}),
    "pull": frozenset({"rebase", "ff"}),
    "push": frozenset({"default", "autosetupremote"}),
    "fetch": frozenset({"prune"}),
}
"""What ``git init``, ``git remote add``, ``git branch -u`` and ``git config user.*``
write: keys that never make git run a program. Anything else in a repository a command
created (``core.hooksPath``, ``core.fsmonitor``, ``core.pager``, filters, aliases,
``include`` …) can run code when you use git there, and quarantines it."""

_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)\s*(?:=.*)?$")


@dataclass(frozen=True)
class _Entry:
    kind: str  # "dir", "file", "link"
    dev: int
    ino: int
    detail: bytes = b""  # a link's target, a small file's content


@dataclass
class Snapshot:
    project: str
    dot_git: _Entry | None
    dot_pi: bool
    missing: list[str] = field(default_factory=list)
    """Paths of the repository's protected files and folders that did not exist (a
    command could create them where nothing was mounted read-only)."""
    saved: dict[str, dict[str, tuple[int, bytes] | None]] = field(default_factory=dict)
    """Landlock: protected path -> {relative file: (mode, content)}; ``None`` when too big."""


def _entry(path: str) -> _Entry | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return _Entry("link", info.st_dev, info.st_ino, os.fsencode(os.readlink(path)))
    if stat.S_ISDIR(info.st_mode):
        return _Entry("dir", info.st_dev, info.st_ino)
    detail = b""
    if stat.S_ISREG(info.st_mode) and info.st_size <= 4096:
        try:
            with open(path, "rb") as handle:
                detail = handle.read()
        except OSError:
            pass
    return _Entry("file", info.st_dev, info.st_ino, detail)


def _files(root: str, budget: list[int]) -> dict[str, tuple[int, bytes] | None]:
    """Every entry below ``root`` (or ``root`` itself, a file) by relative path: its mode
    and content (a link's target; nothing for a folder), ``None`` when over the budget."""
    out: dict[str, tuple[int, bytes] | None] = {}
    if not os.path.lexists(root):
        return out
    if os.path.isdir(root) and not os.path.islink(root):
        paths = []
        for folder, dirs, names in os.walk(root):
            paths += [os.path.join(folder, name) for name in (*dirs, *names)]
    else:
        paths = [root]
    for path in paths:
        rel = os.path.relpath(path, root)
        try:
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                out[rel] = (info.st_mode, os.fsencode(os.readlink(path)))
            elif not stat.S_ISREG(info.st_mode):
                out[rel] = (info.st_mode, b"")
            elif info.st_size > budget[0]:
                out[rel] = None
            else:
                with open(path, "rb") as handle:
                    content = handle.read()
                budget[0] -= len(content)
                out[rel] = (info.st_mode, content)
        except OSError:
            continue
    return out


def take(plan: Plan, *, restore_protected: bool, kept: tuple[str, ...] = ()) -> Snapshot:
    """What :func:`check` compares with once the command ended. ``restore_protected``:
    the backend cannot keep the protected paths read-only (Landlock), so save them —
    all but ``kept``, which it does keep (pi's agent directory)."""
    project = plan.cwd
    snapshot = Snapshot(project, _entry(os.path.join(project, ".git")), os.path.lexists(os.path.join(project, ".pi")))
    if snapshot.dot_git is not None:
        snapshot.missing = [path for path in git_protected(project) if not os.path.lexists(path)]
    if restore_protected:
        budget = [MAX_SAVED_BYTES]
        for path in plan.protected:
            if path in kept:
                continue
            if any(path == w or path.startswith(w.rstrip("/") + "/") for w in plan.writable):
                snapshot.saved[path] = _files(path, budget)
    return snapshot


def git_protected(project: str) -> list[str]:
    """The hooks, configuration and submodule repositories of the project's repository."""
    from .settings import _git_paths

    return [path for path in _git_paths(project).protected]


def _free_name(path: str) -> str:
    candidate, n = path + QUARANTINE, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = f"{path}{QUARANTINE}-{n}"
    return candidate


def _quarantine(path: str) -> str:
    target = _free_name(path)
    os.rename(path, target)
    return target


def config_problem(text: str) -> str | None:
    """The first key of a git configuration outside :data:`SAFE_CONFIG`, or ``None``."""
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                return f"an unreadable line {line[:60]!r}"
            section = match.group(1).lower().split(".")[0]
            line = match.group(2).strip()
            if not line or line[0] in "#;":
                continue
        key = _KEY.match(line)
        if section is None or key is None:
            return f"an unreadable line {line[:60]!r}"
        name = key.group(1).lower()
        if name not in SAFE_CONFIG.get(section, frozenset()):
            return f"{section}.{name}"
    return None


def repository_problem(dot_git: str) -> str | None:
    """Why a repository a command created could run code when git is used there."""
    git_dir = dot_git
    if os.path.islink(dot_git) or os.path.isfile(dot_git):
        if os.path.isfile(dot_git) and not os.path.islink(dot_git):
            try:
                with open(dot_git, encoding="utf-8", errors="replace") as handle:
                    first = handle.readline().strip()
            except OSError:
                return "an unreadable .git file"
            if not first.startswith("gitdir:"):
                return "a .git file that names no repository"
            git_dir = os.path.join(os.path.dirname(dot_git), first[len("gitdir:") :].strip())
        git_dir = os.path.realpath(git_dir)
        if not os.path.isdir(git_dir):
            return None
    folders = [git_dir]
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8", errors="replace") as handle:
            folders.append(os.path.realpath(os.path.join(git_dir, handle.read().strip())))
    except OSError:
        pass
    for folder in folders:
        hooks = os.path.join(folder, "hooks")
        try:
            names = os.listdir(hooks) if os.path.isdir(hooks) else []
        except OSError:
            names = []
        planted = sorted(name for name in names if not name.endswith(".sample"))
        if planted:
            return f"hooks ({', '.join(planted)})"
        for name in ("config", "config.worktree"):
            try:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                    text = handle.read(1_000_000)
            except OSError:
                continue
            problem = config_problem(text)
            if problem is not None:
                return f"the configuration key {problem}"
        if os.path.isdir(os.path.join(folder, "modules")):
            return "submodule repositories (modules)"
    return None


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


def _new_part_problem(path: str) -> str | None:
    """Whether a hooks folder, configuration or submodule folder that a command created in
    an existing repository can run a program."""
    name = os.path.basename(path)
    if name == "hooks":
        try:
            planted = sorted(n for n in os.listdir(path) if not n.endswith(".sample"))
        except OSError:
            return "a hooks entry"
        return f"hooks ({', '.join(planted)})" if planted else None
    if name == "modules":
        return "submodule repositories (modules)"
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            problem = config_problem(handle.read(1_000_000))
    except OSError:
        return f"an unreadable {name}"
    return f"the configuration key {problem} ({name})" if problem is not None else None


def _restore_files(root: str, saved: dict[str, tuple[int, bytes] | None]) -> list[str]:
    """Put ``root`` back as saved (entries added removed, changed ones rewritten, removed
    ones recreated); the relative paths that had changed."""
    now = _files(root, [MAX_SAVED_BYTES])
    changed: list[str] = []
    for rel in sorted(set(now) | set(saved)):  # a folder before what it holds
        after = now.get(rel)
        path = root if rel == "." else os.path.join(root, rel)
        if rel not in saved:  # added by the command
            changed.append(rel)
            _remove(path)
            continue
        before = saved[rel]
        if before == after:
            continue
        changed.append(rel)
        if before is None:  # not saved (too big): reported, not restored
            continue
        mode, content = before
        if stat.S_ISDIR(mode):
            if not (os.path.isdir(path) and not os.path.islink(path)):
                _remove(path)
                os.makedirs(path, exist_ok=True)
            os.chmod(path, stat.S_IMODE(mode))
            continue
        _remove(path)
        os.makedirs(os.path.dirname(path) or root, exist_ok=True)
        if stat.S_ISLNK(mode):
            os.symlink(os.fsdecode(content), path)
        elif stat.S_ISREG(mode):
            with open(path, "wb") as handle:
                handle.write(content)
            os.chmod(path, stat.S_IMODE(mode))
    return changed


def check(snapshot: Snapshot, plan: Plan) -> list[tuple[str, str]]:
    """Compare with ``snapshot``, repair, and say what was repaired."""
    repairs: list[tuple[str, str]] = []
    project = snapshot.project
    dot_git = os.path.join(project, ".git")
    now = _entry(dot_git)
    before = snapshot.dot_git
    try:
        if before is None and now is not None:
            problem = repository_problem(dot_git)
            if problem is not None:
                moved = _quarantine(dot_git)
                repairs.append((dot_git, f"a new repository with {problem}: moved aside to {os.path.basename(moved)}"))
        elif (
            before is not None
            and now != before
            and not (
                now is not None and before.kind == now.kind == "dir" and (before.dev, before.ino) == (now.dev, now.ino)
            )
        ):
            repairs.append((dot_git, _put_back(project, dot_git, before, now)))
        for path in snapshot.missing:
            if os.path.lexists(path) and (problem := _new_part_problem(path)) is not None:
                moved = _quarantine(path)
                repairs.append(
                    (path, f"{problem} appeared in the repository: moved aside to {os.path.basename(moved)}")
                )
        if not snapshot.dot_pi and os.path.lexists(os.path.join(project, ".pi")):
            moved = _quarantine(os.path.join(project, ".pi"))
            repairs.append(
                (
                    os.path.join(project, ".pi"),
                    "a new .pi folder (plugins and settings pi runs outside the sandbox): "
                    f"moved aside to {os.path.basename(moved)}",
                )
            )
        for path, saved in snapshot.saved.items():
            changed = _restore_files(path, saved)
            if changed:
                shown = ", ".join(changed[:5]) + (" …" if len(changed) > 5 else "")
                repairs.append((path, f"changed ({shown}): restored as it was before the command"))
    except OSError as exc:
        repairs.append((project, f"could not be checked or repaired after the command: {exc}"))
    return repairs


def _put_back(project: str, dot_git: str, before: _Entry, now: _Entry | None) -> str:
    """The repository entry changed: move the replacement aside and restore the
    original (found by its inode when it was renamed; rewritten when it was a link or
    a ``.git`` file)."""
    moved = _quarantine(dot_git) if now is not None else None
    aside = f"; the replacement moved aside to {os.path.basename(moved)}" if moved else ""
    if before.kind == "link":
        os.symlink(os.fsdecode(before.detail), dot_git)
        return f"the repository link was changed: restored{aside}"
    if before.kind == "file":
        with open(dot_git, "wb") as handle:
            handle.write(before.detail)
        return f"the repository's .git file was changed: restored{aside}"
    for name in os.listdir(project):
        path = os.path.join(project, name)
        entry = _entry(path)
        if entry is not None and entry.kind == "dir" and (entry.dev, entry.ino) == (before.dev, before.ino):
            os.rename(path, dot_git)
            return f"the repository was renamed to {name}: put back{aside}"
    return f"the repository was removed or moved out of the project{aside}"
