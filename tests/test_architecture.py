"""The package's layer order, read from the source (docs/architecture.md has the diagram).

Every ``import`` and ``from ... import`` anywhere in a module counts: at the top, inside a function,
inside ``if TYPE_CHECKING:`` (a type-only import still ties the two modules' designs together, and
counting it keeps the rule simple to check). The graph of modules must be acyclic and no import may
run from a layer to a layer above it. Strings naming code (``"module:attr"`` in a lazy registry) are
not imports: they are how a lower layer names a writer or a labeller that a higher one provides.
"""

from __future__ import annotations

import ast
import graphlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "collapse_probe"

LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"_version", "errors", "core"}),
    ("pipelines", {"pipelines"}),
    ("integrations", {"integrations"}),
    ("results", {"results"}),
    ("models", {"models"}),
    ("simulators", {"simulators"}),
    ("benchmarks", {"benchmarks"}),
    ("rollout", {"rollout"}),
    ("metrics", {"metrics"}),
    ("play", {"pipelines/play"}),
    ("monitor", {"integrations/monitor"}),
    ("crossplay", {"pipelines/crossplay"}),
    ("gate", {"pipelines/gate"}),
    ("trainers", {"trainers"}),
    ("interop", {"integrations/interop"}),
    ("audit", {"pipelines/audit"}),
    ("compare", {"pipelines/compare"}),
    ("report", {"report"}),
    ("api", {""}),
    ("dashboard", {"dashboard"}),
    ("cli", {"cli", "__main__"}),
]  # fmt: skip
CONTAINERS = ("pipelines", "integrations")
"""Top-level packages that only group packages: each member (``pipelines/audit``) is a unit of its own, and
the container's ``__init__`` (a docstring, no imports) is a unit too."""

"""Layer name and the units under ``collapse_probe`` it holds (a top-level name, or ``container/member``), bottom first (``""`` is the
package itself, ``collapse_probe/__init__.py``: the public API). A module may import its own layer
and the layers below it. Every package (a directory with ``__init__.py``) has a layer of its own; only
flat modules share one (the utilities at the bottom, ``__main__`` beside the command line it runs).
To reorganise the top level, edit this table: the tests below read nothing else."""

NOT_CODE = {"data", "schemas"}
"""Top-level directories under ``collapse_probe`` that hold shipped files, not modules."""

LEVEL = {name: i for i, (_, names) in enumerate(LAYERS) for name in names}


def _modules() -> dict[str, Path]:
    out = {}
    for f in [*PACKAGE.rglob("*.py"), *(PACKAGE / "dashboard").rglob("*.py")]:  # dashboard/: a link to dashboards/
        rel = f.relative_to(REPO).with_suffix("")
        if "data" in rel.parts[1:2]:  # shipped data sets (demo repositories), not the package's code
            continue
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """Dotted names an import statement may load: the module and, for ``from``, module.name."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".")
        if path.name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target] + [f"{target}.{a.name}" for a in node.names]


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {imported package module -> line of the first import}, over the whole source."""
    mods = _modules()
    graph: dict[str, dict[str, int]] = {}
    for mod, path in mods.items():
        deps: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported(mod, path, node):
                if not (name == "collapse_probe" or name.startswith("collapse_probe.")):
                    continue
                if name == "collapse_probe" and isinstance(node, ast.ImportFrom):
                    continue  # ``from collapse_probe import x`` loads x; x is counted on its own
                while name not in mods:  # ``from a.b import f``: f is an attribute of a.b
                    name = name.rpartition(".")[0]
                if name != mod:
                    deps.setdefault(name, node.lineno)
        graph[mod] = deps
    return graph


def layer_of(module: str) -> int:
    top = top_level(module)
    if top not in LEVEL:
        pytest.fail(f"{module}: not in the layer table of tests/test_architecture.py; add {top!r} to its layer")
    return LEVEL[top]


def test_every_import_runs_down_the_layer_order():
    graph, files = import_graph(), _modules()
    up = [
        f"{files[mod].relative_to(REPO)}:{line}: {mod} ({LAYERS[layer_of(mod)][0]}) imports "
        f"{dep} ({LAYERS[layer_of(dep)][0]})"
        for mod, deps in sorted(graph.items())
        for dep, line in sorted(deps.items())
        if layer_of(dep) > layer_of(mod)
    ]
    assert not up, "imports that run up the layer order:\n" + "\n".join(up)


def top_level(module: str) -> str:
    """The unit under ``collapse_probe`` a module belongs to: its top-level name (``""``: the package itself),
    or ``container/member`` inside :data:`CONTAINERS` (``pipelines/audit``)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in CONTAINERS:
        return f"{parts[1]}/{parts[2]}"
    return parts[1] if len(parts) > 1 else ""


def package_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, str]]:
    """Top-level name -> {top-level name it imports -> the first such import, as ``module:line -> module``}."""
    out: dict[str, dict[str, str]] = {}
    for mod, deps in sorted(graph.items()):
        edges = out.setdefault(top_level(mod), {})
        for dep, line in sorted(deps.items()):
            if top_level(dep) != top_level(mod):
                edges.setdefault(top_level(dep), f"{mod}:{line} -> {dep}")
    return out


def package_cycle(graph: dict[str, dict[str, int]]) -> list[str]:
    """One cycle between top-level names, each step with the import that makes it; ``[]`` when there is none."""
    packages = package_graph(graph)
    try:
        list(graphlib.TopologicalSorter({p: set(d) for p, d in packages.items()}).static_order())
    except graphlib.CycleError as exc:
        cycle = list(reversed(exc.args[1]))  # graphlib lists a cycle against the edges' direction
        return [f"{a} -> {b} ({packages[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False)]
    return []


def test_no_import_cycle_between_packages():
    """A package-level graph (every import of every module, lazy ones included): two packages never import
    each other, even when the modules involved form no cycle (``pipelines/audit`` -> ``integrations/interop``
    -> ``pipelines/audit``)."""
    cycle = package_cycle(import_graph())
    assert not cycle, "import cycle between packages:\n" + "\n".join(cycle)


def test_package_cycle_checker_sees_a_cycle_the_module_graph_does_not():
    graph = {
        "collapse_probe.pipelines.audit._published": {"collapse_probe.integrations.interop._inspect": 82},
        "collapse_probe.integrations.interop._inspect": {},
        "collapse_probe.integrations.interop._rundata": {"collapse_probe.pipelines.audit._sampling": 123},
        "collapse_probe.pipelines.audit._sampling": {},
    }
    list(graphlib.TopologicalSorter({m: set(d) for m, d in graph.items()}).static_order())  # modules: acyclic
    cycle = package_cycle(graph)
    assert len(cycle) == 2 and {c.split(" (")[0] for c in cycle} == {
        "pipelines/audit -> integrations/interop",
        "integrations/interop -> pipelines/audit",
    }
    assert any(
        "collapse_probe.integrations.interop._rundata:123 -> collapse_probe.pipelines.audit._sampling" in c
        for c in cycle
    )
    del graph["collapse_probe.integrations.interop._rundata"]
    assert package_cycle(graph) == []


def _top_level_names() -> set[str]:
    names = {"", *(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")}
    names |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    for c in CONTAINERS:
        names |= {f"{c}/{p.stem}" for p in (PACKAGE / c).glob("*.py") if p.stem != "__init__"}
        names |= {f"{c}/{p.name}" for p in (PACKAGE / c).iterdir() if (p / "__init__.py").is_file()}
    return names


def test_the_layer_table_names_every_top_level_name_once_and_each_package_alone():
    named = [n for _, names in LAYERS for n in names]
    assert len(named) == len(set(named)), f"named in two layers: {sorted({n for n in named if named.count(n) > 1})}"
    actual = _top_level_names()
    assert not actual - set(named), f"not in the layer table: {sorted(actual - set(named))}"
    assert not set(named) - actual, f"in the layer table but not in collapse_probe/: {sorted(set(named) - actual)}"
    strays = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    strays -= actual | NOT_CODE
    assert not strays, f"directories under collapse_probe/ that are neither a package nor data: {sorted(strays)}"
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    packages |= {n for n in actual if "/" in n}
    shared = [(layer, sorted(names & packages)) for layer, names in LAYERS if len(names & packages) > 1]
    assert not shared, f"packages sharing a layer (give each its own): {shared}"


def test_import_graph_is_acyclic():
    graph = import_graph()
    try:
        list(graphlib.TopologicalSorter({m: set(d) for m, d in graph.items()}).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_graph_sees_function_level_and_type_checking_imports(tmp_path):
    """The checker itself: an import inside a function or under TYPE_CHECKING is an edge."""
    graph = import_graph()
    embedding = graph["collapse_probe.metrics.partitioners._embedding"]
    assert "collapse_probe.models._encoder" in embedding  # inside load_encoder
    assert "collapse_probe.core._reports" in graph["collapse_probe.pipelines.crossplay"]  # inside run_crossplay_async
    tree = ast.parse(
        "if TYPE_CHECKING:\n    from collapse_probe.report import x\ndef f():\n    import collapse_probe.cli\n"
    )
    names = [n for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
             for n in _imported("collapse_probe.metrics.m", PACKAGE / "metrics" / "m.py", node)]  # fmt: skip
    assert {"collapse_probe.report", "collapse_probe.cli"} <= set(names)


def _fresh_modules(statement: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_metrics_load_neither_benchmarks_nor_models():
    loaded = _fresh_modules("import collapse_probe.metrics")
    assert "collapse_probe.metrics" in loaded
    wrong = [m for m in loaded if m.split(".")[:2] in (["collapse_probe", "benchmarks"], ["collapse_probe", "models"])]
    assert not wrong, f"import collapse_probe.metrics loaded {wrong}"


def test_every_report_writer_loads():
    from collapse_probe.core import _reports

    assert set(_reports.REPORT_WRITERS) == {"audit", "audit-table", "compare", "crossplay", "monitor", "play", "train"}
    for kind in _reports.REPORT_WRITERS:
        assert callable(_reports.report_writer(kind))


def test_the_wheel_ships_no_generator_scripts():
    """What the package data holds is data: the scripts that generate it live in ``datasets/build/``. The CooperBench
    demo tasks' ``repo/`` trees are exempt: they are the tasks' own source (data the arena runs tests on)."""
    data = PACKAGE / "data"
    scripts = sorted(str(p.relative_to(REPO)) for p in data.rglob("*.py") if "repo" not in p.relative_to(data).parts)
    assert not scripts, f"generator scripts inside the package data: {scripts}"


def test_every_named_set_is_one_registry_type():
    """Benchmarks, backends, partitioners, metrics, labellers, published formats, report writers and
    training methods are all found through ``_plugins.Registry`` (one loader, one unknown-name error)."""
    from collapse_probe.benchmarks import _registry as benchmarks
    from collapse_probe.core import _reports
    from collapse_probe.errors import ConfigError
    from collapse_probe.metrics import estimators, partitioners
    from collapse_probe.metrics.partitioners import _label
    from collapse_probe.models import _registry as models
    from collapse_probe.trainers import methods

    registries = {
        "benchmarks": benchmarks.BENCHMARKS, "published formats": benchmarks.PUBLISHED_FORMATS,
        "backends": models.BACKENDS, "partitioners": partitioners.PARTITIONERS, "metrics": estimators.METRICS,
        "labellers": _label.LABELLERS, "report writers": _reports.REPORT_WRITERS, "methods": methods.REGISTRY,
    }  # fmt: skip
    assert {k: type(v).__name__ for k, v in registries.items()} == dict.fromkeys(registries, "Registry")
    for what, reg in registries.items():
        with pytest.raises(ConfigError, match=r"unknown .* 'no-such-name'\. .*Known: "):
            reg.load("no-such-name")
        for name in reg:
            assert reg.known(name), what


def test_every_config_is_one_pydantic_config_and_none_is_a_dataclass() -> None:
    """One config system: every ``*Config`` class of the package is a :class:`~collapse_probe.core._constraints.Config`
    (a pydantic model whose fields declare their constraints), none a dataclass, and no flat-keyword shim
    (``InitVar``, ``UNSET``) remains."""
    import dataclasses
    import importlib

    from collapse_probe.core._constraints import Config

    root = Path(__file__).parents[1] / "collapse_probe"
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "InitVar" not in text and "UNSET" not in text, f"{path}: a flat-keyword shim"
        tree = ast.parse(text)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Config") and node.name != "Config":
                module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
                cls = getattr(importlib.import_module(module), node.name)
                assert issubclass(cls, Config) and not dataclasses.is_dataclass(cls), f"{module}.{node.name}"
                found.append(node.name)
    assert {"AuditConfig", "PlayConfig", "CrossplayConfig", "TrainConfig", "LabConfig", "MonitorConfig"} <= set(found)


def _config_commands() -> tuple[str, ...]:
    from collapse_probe.cli import CONFIG_COMMANDS

    return CONFIG_COMMANDS  # each has a config model: collapse_probe.cli.<command>.CONFIG


@pytest.mark.parametrize("command", _config_commands())
def test_no_config_field_has_a_hand_written_flag(command: str) -> None:
    """Every flag of a subcommand that sets a field of its config is generated from the config model
    (type, default, help and ``$COLLAPSE_PROBE_*`` from the field): a hand-written ``add_argument`` for a
    config field fails here, naming the flag. The generated flags are the config's, under its names."""
    import importlib

    from collapse_probe.cli import build_parser

    module, _, name = importlib.import_module(f"collapse_probe.cli.{command}").CONFIG.partition(":")
    fields = set(getattr(importlib.import_module(module), name).model_fields)
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    actions = [a for a in sub.choices[command]._actions if a.dest in fields]
    hand_written = [a.option_strings[0] for a in actions if not getattr(a, "from_model", False)]
    assert not hand_written, f"collapse-probe {command}: flags of config fields written by hand: {hand_written}"
    assert len(actions) >= 4, f"collapse-probe {command}: only {len(actions)} flags set config fields"


ARCHITECTURE_PAGE = REPO / "docs" / "architecture.md"
PATH_IN_TICKS = r"`([\w/-]+(?:\.py|/))`"
"""A path the page names: ``cli/_flags.py``, ``pipelines/audit/``, ``tests/test_architecture.py`` (dotted names are not paths)."""


def _doc_path(name: str) -> Path:
    top = name.split("/", 1)[0]
    return (
        REPO / name
        if top in {"tests", "scripts", "docs", ".ci", "collapse_probe", "datasets", "dashboards"}
        else PACKAGE / name
    )


def diagram_layers(text: str) -> list[tuple[str, set[str]]]:
    """The layer diagram of docs/architecture.md (its first code block, top layer first) as ``LAYERS`` is
    written: bottom first, each layer's top-level names (``collapse_probe/__init__.py`` is ``""``). A layer
    line starts at column 1; a line indented no further than the names column continues the names;
    names are two spaces apart, the description three or more spaces after them."""
    import re

    block = text.split("```\n", 1)[1].split("```", 1)[0]
    layers: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.strip() in ("", "│"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 1:
            layer, _, rest = line.strip().partition(" ")
            layers.append((layer, re.split(r"\s{3,}", rest.strip())[0].split()))
        elif indent <= 14 and layers:
            layers[-1][1].extend(re.split(r"\s{3,}", line.strip())[0].split())
    norm = lambda n: "" if n == "collapse_probe/__init__.py" else n.rstrip("/").removesuffix(".py")  # noqa: E731
    return [(layer, {norm(n) for n in names}) for layer, names in reversed(layers)]


def test_the_architecture_diagram_is_the_layer_table():
    assert diagram_layers(ARCHITECTURE_PAGE.read_text(encoding="utf-8")) == LAYERS, (
        "docs/architecture.md's diagram differs from LAYERS in tests/test_architecture.py: update the page"
    )


def test_the_diagram_reader_sees_a_difference():
    text = "```\n cli          cli/  __main__      the command line\n     │\n utilities    errors  _files\n" \
           "              _jsonl\n```\n"  # fmt: skip
    assert diagram_layers(text) == [("utilities", {"errors", "_files", "_jsonl"}), ("cli", {"cli", "__main__"})]
    assert diagram_layers(text.replace("  __main__", "")) != diagram_layers(text)


def test_every_module_the_architecture_page_names_exists():
    """Outside "Where things moved", each path the page names is there; in that table, each new place is
    there and an old module that moved whole is gone (a "was" cell naming a module that stays says so)."""
    import re

    text = ARCHITECTURE_PAGE.read_text(encoding="utf-8")
    moved = text.split("## Where things moved", 1)[1].split("\n## ", 1)[0]
    missing = sorted({p for p in re.findall(PATH_IN_TICKS, text.replace(moved, "")) if not _doc_path(p).exists()})
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
    rows = [r for r in moved.splitlines() if r.startswith("| `") or r.startswith("| the ")]
    assert len(rows) > 20
    for row in rows:
        was, now, _ = (c.strip() for c in row.strip().strip("|").split("|"))
        gone = [p for p in re.findall(PATH_IN_TICKS, now) if not _doc_path(p).exists()]
        assert not gone, f"docs/architecture.md: moved to {gone}, which does not exist ({row[:80]})"
        stayed = [p for p in re.findall(PATH_IN_TICKS, was) if p.endswith(".py") and _doc_path(p).exists()]
        stayed = [p for p in stayed if f"`{p}`:" not in was and "stay" not in was]
        assert not stayed, f"docs/architecture.md: {stayed} moved, says the table, but still exist ({row[:80]})"
