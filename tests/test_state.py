"""Process-global caches have one owner (``collapse_probe/core/_state.py``): each registers, one call
empties them all, and a module-level cache that does not register is found here."""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import collapse_probe
from collapse_probe.core._state import process_caches

PACKAGE = Path(__file__).resolve().parents[1] / "collapse_probe"

NOT_CACHES = {
    "collapse_probe.core._jsonl._OPEN_RUNS": "the flush hooks of the runs open in this process: emptying it "
    "would lose a live run's last records",
    "collapse_probe.core._observe._first_error": "the run's reliability tally, which _observe.reset() starts "
    "afresh at each run",
    "collapse_probe.rollout._rundir._ANNOUNCE": "run directories whose path is still to be printed once "
    "the run takes them: a pending message",
    "collapse_probe.benchmarks.cooperbench._evaluate._BASE_ROOT": "this process's scratch directory, "
    "removed at exit: emptying it would leak the directory (the BASE repositories in it are the cache)",
    "collapse_probe.core._secrets._SECRETS": "the keys this process was configured with, which every written text "
    "is scrubbed of: emptying it would let a key through to a file",
    "collapse_probe.core._secrets._VARIANTS": "the escaped forms of those configured keys (same reason)",
    "collapse_probe.core._secrets._REAL_URLS": "redacted spec -> the real URL a backend connects to: emptying it "
    "would disconnect a live backend from its endpoint",
    "collapse_probe.integrations.monitor._adapters._warned": "the version notices already given once: a message log, no cache",
    "collapse_probe.integrations.monitor.verl._SESSIONS": "the live monitor sessions of this process's verl workers",
    "collapse_probe.integrations.monitor.verl._BUILT": "the verl classes registered with verl's own registries once per process",
}
"""Module-level containers that are process state but no cache, with the reason they stay out."""

_EMPTY_CALLS = {"dict", "set", "list", "OrderedDict", "defaultdict", "WeakKeyDictionary", "WeakValueDictionary"}


def _is_cache_like(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.Dict, ast.Set, ast.List)):
        return not (getattr(value, "keys", None) or getattr(value, "elts", None))
    if isinstance(value, ast.Call):
        f = value.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        return name in _EMPTY_CALLS or name == "process_cache"
    return False


def module_caches(source: str) -> list[str]:
    """Private module-level names bound to an empty container (or registered): what may fill up."""
    names = []
    for node in ast.parse(source).body:
        targets = (
            [node.target] if isinstance(node, ast.AnnAssign) else node.targets if isinstance(node, ast.Assign) else []
        )
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        for t in targets:
            if isinstance(t, ast.Name) and t.id.startswith("_") and not t.id.startswith("__") and _is_cache_like(value):
                names.append(t.id)
    return names


def _package_caches() -> dict[str, object]:
    found = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE.parent).with_suffix("")
        if rel.parts[1:2] == ("data",) or rel.as_posix() == "collapse_probe/core/_state":
            continue
        names = module_caches(f.read_text(encoding="utf-8"))
        if names:
            module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
            mod = importlib.import_module(module)
            found.update({f"{module}.{n}": getattr(mod, n) for n in names})
    return found


def test_every_module_level_cache_is_registered():
    caches = _package_caches()
    registered = {id(c) for c in process_caches().values()}
    assert {"collapse_probe.models._registry._INSTANCES", "collapse_probe.simulators._participant._WRAPPED",
            "collapse_probe.models.local._LOADED", "collapse_probe.core._identity._MEMO"} <= set(caches)  # fmt: skip
    unregistered = [n for n, c in caches.items() if id(c) not in registered and n not in NOT_CACHES]
    assert not unregistered, (
        "register these with collapse_probe.core._state.process_cache (or say in NOT_CACHES why they are no cache): "
        + ", ".join(unregistered)
    )
    stale = [n for n in NOT_CACHES if n not in caches]
    assert not stale, f"NOT_CACHES names what no longer exists: {stale}"


def test_the_scan_sees_a_new_unregistered_cache():
    src = "import x\n_SEEN: dict[str, int] = {}\n_MORE = set()\n_REGEX = re.compile('a')\n_TABLE = {'a': 1}\nPUBLIC = {}\n"
    assert module_caches(src) == ["_SEEN", "_MORE"]
    assert module_caches("_X: dict = process_cache('x', {})\n") == ["_X"]


def test_reset_caches_empties_every_registered_cache(tmp_path, monkeypatch):
    from collapse_probe.core._identity import file_fingerprint
    from collapse_probe.models import get_model
    from collapse_probe.simulators import make_participant

    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))
    scripted = tmp_path / "sim.json"
    scripted.write_text(json.dumps({"responses": [{"text": "yes", "p": 1.0}]}))
    spec = f"scripted:{scripted}"
    sim = make_participant(spec)
    model = get_model(spec)
    file_fingerprint(scripted)
    _package_caches()  # every module with a cache is imported, so every cache is registered
    caches = process_caches()
    for name in ("models.instances", "simulators.cached", "simulators.response_caches", "identity.file_hashes"):
        assert len(caches[name]) > 0, name
    collapse_probe.reset_caches()
    assert {n: len(c) for n, c in process_caches().items() if len(c)} == {}
    again = get_model(spec)
    assert again is not model and make_participant(spec).model is not sim.model  # built anew, from the same file


def test_a_cache_wrapper_is_for_the_model_it_wraps_even_when_an_id_is_reused(tmp_path, monkeypatch):
    from collapse_probe.simulators import _participant

    monkeypatch.setenv("COLLAPSE_PROBE_CACHE", str(tmp_path / "cache.sqlite"))

    class Model:
        spec = "m"
        reports_usage = False

    a, b = Model(), Model()
    wrapped = _participant._cached(a)
    assert _participant._cached(a) is wrapped and wrapped.inner is a
    # a dead model's id taken by a new object must not hand the new one the old wrapper
    _participant._WRAPPED[(id(b), str(tmp_path / "cache.sqlite"))] = wrapped
    assert _participant._cached(b).inner is b
    _participant._METERED[id(b)] = _participant._metered(a)
    assert _participant._metered(b).inner is b
    collapse_probe.reset_caches()
