"""The shipped data, its cards and its builders stay in step (``datasets/README.md``).

Every entry of ``collapse_probe/data/`` has a card in ``datasets/`` and a row in the index, every file is named
in its card, every builder a card names exists, the deterministic builders reproduce their files byte for
byte, and the wheel's package-data globs carry every file git tracks under ``collapse_probe/data``.
"""

from __future__ import annotations

import filecmp
import re
import shutil
import subprocess
import sys
from glob import glob
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "collapse_probe"
DATA = PACKAGE / "data"
DATASETS = REPO / "datasets"
INDEX = DATASETS / "README.md"
BUILDER = re.compile(r"(?:datasets/build|scripts|benchmarks)/[\w.-]+\.(?:py|sh)")
"""A builder or measuring script a card names by its path from the repository root."""


def _tracked() -> list[str]:
    """The files under ``collapse_probe/data`` that git tracks, relative to it (what the wheel must carry)."""
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout of the repository")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", "collapse_probe/data"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    return sorted(str(Path(p).relative_to("collapse_probe/data")) for p in out.split("\0") if p)


def _entries() -> list[str]:
    return sorted({p.split("/", 1)[0] for p in _tracked()})


def card_of(entry: str) -> Path:
    """The card of a top-level entry: ``p4g/`` -> ``datasets/p4g.md``, ``prices.toml`` -> ``datasets/prices.md``."""
    return DATASETS / f"{Path(entry).stem}.md"


def _index_rows() -> list[list[str]]:
    """The data table of the index: one list of cells per row whose first cell names a data path."""
    rows = []
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5 and cells[0] != "`collapse_probe/data/`":  # not the header
            rows.append(cells)
    return rows


def test_every_shipped_entry_has_a_card_and_an_index_row():
    rows = _index_rows()
    missing_card = [e for e in _entries() if not card_of(e).is_file()]
    assert not missing_card, f"no card in datasets/ for collapse_probe/data/{missing_card}"
    named = {re.match(r"`([^`/]+)", row[0]).group(1) for row in rows}  # type: ignore[union-attr]
    missing_row = [e for e in _entries() if e not in named]
    assert not missing_row, f"datasets/README.md has no row for collapse_probe/data/{missing_row}"
    for row in rows:
        entry = re.match(r"`([^`/]+)", row[0]).group(1)  # type: ignore[union-attr]
        link = re.fullmatch(r"\[[^\]]+\]\(([^)]+)\)", row[1])
        assert link, f"datasets/README.md row {row[0]}: card column must be a link, got {row[1]!r}"
        assert DATASETS / link.group(1) == card_of(entry), f"row {row[0]} links {link.group(1)}, not its card"
        assert (DATA / entry).exists(), f"datasets/README.md lists {row[0]}, which collapse_probe/data does not hold"


def test_every_shipped_file_is_named_in_its_card():
    """A file (or, for a tree, its top directory inside the entry) appears in its card: a new file gets a line."""
    unnamed = []
    for path in _tracked():
        entry, _, rest = path.partition("/")
        first = rest.split("/", 1)[0] if rest else entry
        card = card_of(entry)
        if not card.is_file() or first not in card.read_text(encoding="utf-8"):
            unnamed.append(path)
    assert not unnamed, f"shipped files their card does not name: {unnamed}"


DATASHEET = ("**What**", "**Source and licence**", "**How built**", "**Size**", "**May be used for**", "**Not for**")
"""What every card says of each dataset it describes (a card of several files says it once per part)."""


def test_every_card_is_a_datasheet():
    cards = sorted({card_of(e) for e in _entries()})
    incomplete = {
        c.name: [field for field in DATASHEET if field not in c.read_text(encoding="utf-8")]
        for c in cards
        if c.is_file()
    }
    incomplete = {name: missing for name, missing in incomplete.items() if missing}
    assert not incomplete, f"cards without these datasheet fields: {incomplete}"


def test_every_builder_a_card_names_exists():
    texts = {p.name: p.read_text(encoding="utf-8") for p in [*DATASETS.glob("*.md")]}
    named = {(name, m) for name, text in texts.items() for m in BUILDER.findall(text)}
    named |= {("README.md", f"datasets/{m}") for m in re.findall(r"`(build/[\w.-]+\.py)`", texts["README.md"])}
    assert len(named) >= 6
    missing = sorted(f"{card}: {path}" for card, path in named if not (REPO / path).is_file())
    assert not missing, f"builders named in datasets/ that do not exist: {missing}"
    for row in _index_rows():
        builder = row[2]
        assert builder.startswith(("written by hand", "downloaded")) or BUILDER.search(builder), (
            f"datasets/README.md row {row[0]}: builder must be a script path, 'written by hand' or 'downloaded', got {builder!r}"
        )


def test_every_builder_in_datasets_build_has_a_card():
    named = "".join(p.read_text(encoding="utf-8") for p in DATASETS.glob("*.md"))
    orphans = [p.name for p in sorted((DATASETS / "build").glob("*.py")) if f"datasets/build/{p.name}" not in named]
    assert not orphans, f"builders no card names: {orphans}"


DETERMINISTIC = [
    ("make_p4g_personas.py", "p4g", ["personas.jsonl"], []),
    (
        "make_published_samples.py",
        "published",
        [
            "tau2-voice-sim-a.json",
            "tau2-voice-sim-b.json",
            "verifiers-traces.jsonl",
            "verifiers-legacy/results.jsonl",
            "verifiers-legacy/metadata.json",
            "nemo-gym-rollouts.jsonl",
        ],
        [],
    ),
    ("make_compare_samples.py", "published/compare", None, []),
    ("make_cooperbench_demo.py", "cooperbench-demo", None, ["--no-check"]),
]
"""(builder, the data directory it writes, the files it writes there (None: every tracked file but the
README), extra arguments). Each runs in seconds without a model."""


@pytest.mark.parametrize(("builder", "where", "files", "extra"), DETERMINISTIC, ids=[d[0] for d in DETERMINISTIC])
def test_a_deterministic_builder_reproduces_its_shipped_files(
    tmp_path: Path, builder: str, where: str, files: list[str] | None, extra: list[str]
):
    if files is None:
        files = [p[len(where) + 1 :] for p in _tracked() if p.startswith(where + "/") and not p.endswith("README.md")]
    assert files
    proc = subprocess.run(
        [sys.executable, str(DATASETS / "build" / builder), "--out", str(tmp_path), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(files), f"{builder} writes {written}; {where} ships {sorted(files)}"
    differ = [f for f in files if not filecmp.cmp(tmp_path / f, DATA / where / f, shallow=False)]
    assert not differ, f"{builder} no longer reproduces collapse_probe/data/{where}/: {differ} differ"


def test_the_package_data_globs_carry_every_shipped_file():
    """The globs as setuptools expands them (``glob(..., recursive=True)``, files only, no dot files) against
    what git tracks: a file the globs miss would be in the checkout but not in the wheel."""
    from setuptools.config.pyprojecttoml import read_configuration

    config = read_configuration(REPO / "pyproject.toml", expand=False)
    patterns = config["tool"]["setuptools"]["package-data"]["collapse_probe"]
    carried = {
        str(Path(p).relative_to(DATA))
        for pattern in patterns
        for p in glob(str(PACKAGE / pattern), recursive=True)
        if Path(p).is_file() and Path(p).is_relative_to(DATA)
    }
    left_out = sorted(set(_tracked()) - carried)
    assert not left_out, f"pyproject.toml's package-data globs {patterns} leave out shipped files: {left_out}"


def test_the_wheel_carries_every_shipped_file_and_nothing_of_datasets(tmp_path: Path):
    """A wheel built from the tracked files (what a clone holds) holds every file of ``collapse_probe/data`` and
    none of ``datasets/``: the globs above are what setuptools reads, this is what it writes."""
    import zipfile

    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.decode()
    if not _tracked():
        pytest.fail("git tracks no file under collapse_probe/data")
    clone = tmp_path / "clone"
    for name in filter(None, tracked.split("\0")):
        if (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), "."],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    left_out = sorted(f for f in _tracked() if f"collapse_probe/data/{f}" not in names)
    assert not left_out, f"the wheel leaves out shipped files: {left_out}"
    assert not [n for n in names if n.startswith("datasets/")], "the wheel carries datasets/ (cards and builders)"
