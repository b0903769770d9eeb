"""Regenerate the docker-free CooperBench demo tasks in ``collapse_probe/data/cooperbench-demo/`` (self-written,
MIT like the project). The generator lives here, out of the wheel; its outputs ship in it.

Each task is a tiny pure-Python package: ``repo/`` is BASE, every ``feature<N>/`` holds the spec, the
gold change and the hidden tests as diffs against BASE (made with ``git diff``), and ``run_tests.sh``
is the host-side runner (``run_tests.sh <repo_path> <tests.patch> [<feature.patch>]``). Run
``python datasets/build/make_cooperbench_demo.py`` after editing the sources below; it checks that every gold patch passes
its own tests and that those tests fail at BASE (``--out DIR`` writes elsewhere, ``--no-check`` skips the check).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parents[2] / "collapse_probe" / "data" / "cooperbench-demo"  # what it writes

RUN_TESTS = """#!/bin/bash
# Host-side runner: run_tests.sh <repo_path> <tests.patch> [<feature.patch>]
# Applies the feature patch (if given) and the tests patch with the reference runner's flags, then
# runs the task's test file with $PYTHON (default python3). No dependency installation.
set -e
usage() {{ echo "Usage: $0 <repo_path> <tests.patch> [<feature.patch>]"; exit 1; }}
REPO_PATH="$1"; TEST_PATCH="$2"; FEATURE_PATCH="$3"
[[ -z "$REPO_PATH" || -z "$TEST_PATCH" ]] && usage
[[ ! -d "$REPO_PATH" ]] && {{ echo "ERROR: Repository not found at $REPO_PATH"; exit 1; }}
[[ ! -f "$TEST_PATCH" ]] && {{ echo "ERROR: Test patch not found at $TEST_PATCH"; exit 1; }}
[[ -n "$FEATURE_PATCH" && ! -f "$FEATURE_PATCH" ]] && {{ echo "ERROR: Feature patch not found at $FEATURE_PATCH"; exit 1; }}
TEST_PATCH="$(realpath "$TEST_PATCH")"
[[ -n "$FEATURE_PATCH" ]] && FEATURE_PATCH="$(realpath "$FEATURE_PATCH")"
cd "$REPO_PATH"
if [[ -n "$FEATURE_PATCH" ]]; then
    echo "APPLYING_FEATURE_PATCH: $FEATURE_PATCH"
    git apply --ignore-whitespace --ignore-space-change "$FEATURE_PATCH" || git apply --3way "$FEATURE_PATCH"
fi
echo "APPLYING_TEST_PATCH: $TEST_PATCH"
git apply --ignore-whitespace --ignore-space-change "$TEST_PATCH" || git apply --3way "$TEST_PATCH"
echo "RUNNING_TESTS..."
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1  # the demo tests need no plugins; loading them dominates the run time
"${{PYTHON:-python3}}" -m pytest -p no:cacheprovider {test_file} -v 2>&1
echo "TEST_EXECUTION_COMPLETED"
"""


def d(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def _sub(base: str, old: str, new: str) -> str:
    """``base`` with ``old`` replaced by ``new`` (``old`` must occur: a silent no-op would make an empty patch)."""
    if old not in base:
        raise ValueError(f"snippet not found in the base source: {old!r}")
    return base.replace(old, new)


def _method(s: str) -> str:
    """A method's source, dedented and then indented one level (to append to a class body)."""
    return textwrap.indent(d(s), "    ")


# Every task: base files, test file (run by run_tests.sh), features = list of
# (title, description, {path: new content}, tests appended to the test file).
TASKS: dict[str, dict] = {}

# ---- textkit: one small function that several features want to change -------------------------
TASKS["demo_textkit_task/task1"] = {
    "test_file": "tests/test_slug.py",
    "files": {
        "textkit/__init__.py": d('''
            """Small text helpers."""

            from textkit.slug import slugify

            __all__ = ["slugify"]
            '''),
        "textkit/slug.py": d('''
            """URL slugs."""

            import re


            def slugify(text):
                """Lower-case ``text`` and join its alphanumeric words with ``-``."""
                words = re.findall(r"[a-z0-9]+", text.lower())
                return "-".join(words)
            '''),
        "tests/__init__.py": "",
        "tests/test_slug.py": d("""
            from textkit import slugify


            def test_basic():
                assert slugify("Hello, World!") == "hello-world"


            def test_empty():
                assert slugify("") == ""
            """),
    },
    "features": [
        (
            "Add a custom separator to slugify",
            '`slugify(text, separator="-")`: the words of the slug are joined with `separator` instead of '
            'always `-`. The default keeps today\'s behaviour. Example: `slugify("Hello World", separator="_")` '
            'returns `"hello_world"`.',
            {
                "textkit/slug.py": d('''
            """URL slugs."""

            import re


            def slugify(text, separator="-"):
                """Lower-case ``text`` and join its alphanumeric words with ``separator``."""
                words = re.findall(r"[a-z0-9]+", text.lower())
                return separator.join(words)
            ''')
            },
            d("""


            def test_separator():
                assert slugify("Hello World", separator="_") == "hello_world"
                assert slugify("a b c", separator="") == "abc"
            """),
        ),
        (
            "Limit the length of slugs",
            "`slugify(text, max_length=None)`: when `max_length` is an integer, the slug is cut to at most "
            "`max_length` characters without splitting a word (whole words are dropped from the end; a "
            'trailing separator is never left). `None` means no limit. Example: `slugify("one two three", '
            'max_length=8)` returns `"one-two"`.',
            {
                "textkit/slug.py": d('''
            """URL slugs."""

            import re


            def slugify(text, max_length=None):
                """Lower-case ``text`` and join its alphanumeric words with ``-`` (at most ``max_length`` chars)."""
                words = re.findall(r"[a-z0-9]+", text.lower())
                if max_length is not None:
                    kept = []
                    for w in words:
                        if len("-".join(kept + [w])) > max_length:
                            break
                        kept.append(w)
                    words = kept
                return "-".join(words)
            ''')
            },
            d("""


            def test_max_length():
                assert slugify("one two three", max_length=8) == "one-two"
                assert slugify("one two three", max_length=3) == "one"
                assert slugify("one two", max_length=None) == "one-two"
            """),
        ),
        (
            "Add truncate_words",
            'Add `truncate_words(text, n, ellipsis="...")` to `textkit.slug` and export it from `textkit`: '
            "it keeps the first `n` whitespace-separated words of `text`; when words were dropped it appends "
            '`ellipsis` to the result. Example: `truncate_words("a b c d", 2)` returns `"a b..."`; '
            '`truncate_words("a b", 5)` returns `"a b"`.',
            {
                "textkit/slug.py": d('''
            """URL slugs."""

            import re


            def slugify(text):
                """Lower-case ``text`` and join its alphanumeric words with ``-``."""
                words = re.findall(r"[a-z0-9]+", text.lower())
                return "-".join(words)


            def truncate_words(text, n, ellipsis="..."):
                """The first ``n`` words of ``text``, with ``ellipsis`` when words were dropped."""
                words = text.split()
                if len(words) <= n:
                    return " ".join(words)
                return " ".join(words[:n]) + ellipsis
            '''),
                "textkit/__init__.py": d('''
            """Small text helpers."""

            from textkit.slug import slugify, truncate_words

            __all__ = ["slugify", "truncate_words"]
            '''),
            },
            d("""


            def test_truncate_words():
                from textkit import truncate_words

                assert truncate_words("a b c d", 2) == "a b..."
                assert truncate_words("a b", 5) == "a b"
                assert truncate_words("a b c", 1, ellipsis="~") == "a~"
            """),
        ),
        (
            "Transliterate accented letters in slugs",
            "`slugify` should keep accented Latin letters by mapping them to their ASCII base letter "
            '(NFKD decomposition, combining marks dropped) before lower-casing. Example: `slugify("Crème '
            'Brûlée")` returns `"creme-brulee"`.',
            {
                "textkit/slug.py": d('''
            """URL slugs."""

            import re
            import unicodedata


            def slugify(text):
                """Lower-case ``text`` and join its alphanumeric words with ``-``."""
                text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
                words = re.findall(r"[a-z0-9]+", text.lower())
                return "-".join(words)
            ''')
            },
            d("""


            def test_accents():
                assert slugify("Crème Brûlée") == "creme-brulee"
                assert slugify("Ångström") == "angstrom"
            """),
        ),
    ],
}

# ---- inventory: features that all append methods at the end of one class --------------------
_INV_BASE = d('''
    """A tiny stock-keeping class."""


    class Inventory:
        """Item name -> (quantity, unit price)."""

        def __init__(self):
            self.items = {}

        def add(self, name, quantity, price):
            """Add ``quantity`` units of ``name`` at unit ``price`` (the price is updated)."""
            old = self.items.get(name, (0, price))[0]
            self.items[name] = (old + quantity, price)

        def remove(self, name, quantity):
            """Take ``quantity`` units of ``name`` out; the item disappears at zero."""
            left = self.items[name][0] - quantity
            if left <= 0:
                del self.items[name]
            else:
                self.items[name] = (left, self.items[name][1])
    ''')

TASKS["demo_inventory_task/task2"] = {
    "test_file": "tests/test_store.py",
    "files": {
        "inventory/__init__.py": 'from inventory.store import Inventory\n\n__all__ = ["Inventory"]\n',
        "inventory/store.py": _INV_BASE,
        "tests/__init__.py": "",
        "tests/test_store.py": d("""
            from inventory import Inventory


            def test_add_remove():
                inv = Inventory()
                inv.add("apple", 3, 0.5)
                inv.remove("apple", 1)
                assert inv.items["apple"] == (2, 0.5)
                inv.remove("apple", 2)
                assert "apple" not in inv.items
            """),
    },
    "features": [
        (
            "Add Inventory.total_value",
            "Add a method `Inventory.total_value()` returning the sum of quantity x unit price over all items "
            "(0 for an empty inventory).",
            {
                "inventory/store.py": _INV_BASE
                + "\n"
                + _method('''

                def total_value(self):
                    """Sum of quantity x unit price."""
                    return sum(q * p for q, p in self.items.values())
            ''')
            },
            d("""


            def test_total_value():
                inv = Inventory()
                assert inv.total_value() == 0
                inv.add("a", 2, 1.5)
                inv.add("b", 1, 4.0)
                assert inv.total_value() == 7.0
            """),
        ),
        (
            "Add Inventory.low_stock",
            "Add a method `Inventory.low_stock(threshold)` returning the sorted list of item names whose "
            "quantity is strictly below `threshold`.",
            {
                "inventory/store.py": _INV_BASE
                + "\n"
                + _method('''

                def low_stock(self, threshold):
                    """Names of items with fewer than ``threshold`` units, sorted."""
                    return sorted(n for n, (q, _) in self.items.items() if q < threshold)
            ''')
            },
            d("""


            def test_low_stock():
                inv = Inventory()
                inv.add("b", 1, 1.0)
                inv.add("a", 5, 1.0)
                inv.add("c", 2, 1.0)
                assert inv.low_stock(3) == ["b", "c"]
                assert inv.low_stock(1) == []
            """),
        ),
        (
            "Clear errors when removing stock",
            "`Inventory.remove(name, quantity)` must raise `KeyError` naming the item when it is not in the "
            "inventory, and `ValueError` when `quantity` exceeds the stock (the inventory is then unchanged). "
            "Removing exactly the stock still deletes the item.",
            {
                "inventory/store.py": _sub(
                    _INV_BASE,
                    """        left = self.items[name][0] - quantity
""",
                    """        if name not in self.items:
            raise KeyError(name)
        if quantity > self.items[name][0]:
            raise ValueError(f"only {self.items[name][0]} units of {name} in stock")
        left = self.items[name][0] - quantity
""",
                )
            },
            d("""


            def test_remove_errors():
                import pytest

                inv = Inventory()
                inv.add("a", 2, 1.0)
                with pytest.raises(KeyError):
                    inv.remove("zzz", 1)
                with pytest.raises(ValueError):
                    inv.remove("a", 3)
                assert inv.items["a"] == (2, 1.0)
            """),
        ),
        (
            "Serialise an Inventory to and from a dict",
            'Add `Inventory.to_dict()` returning `{name: {"quantity": q, "price": p}}` and a classmethod '
            "`Inventory.from_dict(data)` building an inventory from that form (round trip preserves items).",
            {
                "inventory/store.py": _INV_BASE
                + "\n"
                + _method('''

                def to_dict(self):
                    """``{name: {"quantity": q, "price": p}}``."""
                    return {n: {"quantity": q, "price": p} for n, (q, p) in self.items.items()}

                @classmethod
                def from_dict(cls, data):
                    """The inventory described by ``data`` (the form of :meth:`to_dict`)."""
                    inv = cls()
                    for name, row in data.items():
                        inv.add(name, row["quantity"], row["price"])
                    return inv
            ''')
            },
            d("""


            def test_round_trip():
                inv = Inventory()
                inv.add("a", 2, 1.5)
                data = inv.to_dict()
                assert data == {"a": {"quantity": 2, "price": 1.5}}
                assert Inventory.from_dict(data).items == inv.items
            """),
        ),
    ],
}

# ---- confparse: features that all rework one parsing loop ------------------------------------
_CONF_BASE = d('''
    """Parse ``key = value`` configuration text."""


    def parse(text):
        """Return a dict of the ``key = value`` lines of ``text`` (blank lines skipped)."""
        result = {}
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            key, _, value = line.partition("=")
            result[key.strip()] = value.strip()
        return result
    ''')

TASKS["demo_confparse_task/task3"] = {
    "test_file": "tests/test_parser.py",
    "files": {
        "confparse/__init__.py": 'from confparse.parser import parse\n\n__all__ = ["parse"]\n',
        "confparse/parser.py": _CONF_BASE,
        "tests/__init__.py": "",
        "tests/test_parser.py": d("""
            from confparse import parse


            def test_pairs():
                assert parse("a = x\\nb=two\\n\\n") == {"a": "x", "b": "two"}
            """),
    },
    "features": [
        (
            "Comments in configuration text",
            "`parse` ignores comment lines, whose first non-blank character is `#` or `;`, and strips an "
            'inline comment introduced by ` #` (space then hash) from values. Example: `parse("# c\\na = 1 # '
            'one")` returns `{"a": "1"}`.',
            {
                "confparse/parser.py": _sub(
                    _CONF_BASE,
                    """        if not line:
            continue
        key, _, value = line.partition("=")
""",
                    """        if not line or line[0] in "#;":
            continue
        key, _, value = line.partition("=")
        value = value.split(" #", 1)[0]
""",
                )
            },
            d("""


            def test_comments():
                assert parse("# c\\n; d\\na = x # one") == {"a": "x"}
            """),
        ),
        (
            "Typed values",
            '`parse` converts values: integers (`"12"`, `"-3"`) to `int`, `true`/`false` (any case) to '
            '`bool`; everything else stays a string. Example: `parse("n = 3\\nok = True")` returns '
            '`{"n": 3, "ok": True}`.',
            {
                "confparse/parser.py": _sub(
                    _CONF_BASE,
                    """        result[key.strip()] = value.strip()
""",
                    """        result[key.strip()] = _coerce(value.strip())
""",
                )
                + "\n\n"
                + d('''
    def _coerce(value):
        """``int`` for integers, ``bool`` for true/false, else the string."""
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        try:
            return int(value)
        except ValueError:
            return value
    ''')
            },
            d("""


            def test_typed():
                assert parse("n = 3\\nm=-4\\nok = True\\nno=false\\ns = x1") == {
                    "n": 3, "m": -4, "ok": True, "no": False, "s": "x1"
                }
            """),
        ),
        (
            "Sections in configuration text",
            'A line `[name]` starts a section: the keys after it are stored as `"name.key"` until the next '
            'section header. Keys before any header keep their plain names. Example: `parse("a=1\\n[db]\\nhost '
            '= x")` returns `{"a": "1", "db.host": "x"}`.',
            {
                "confparse/parser.py": _sub(
                    _CONF_BASE,
                    """    result = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
""",
                    """    result = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip() + "."
            continue
        key, _, value = line.partition("=")
        result[section + key.strip()] = value.strip()
""",
                )
            },
            d("""


            def test_sections():
                assert parse("a=1\\n[db]\\nhost = x\\n[web]\\nport=80") == {
                    "a": "1", "db.host": "x", "web.port": "80"
                }
            """),
        ),
        (
            "Flatten the confparse package",
            "Move `parse` into `confparse/__init__.py` and delete the `confparse/parser.py` module: the "
            "package becomes a single module file. `from confparse import parse` keeps working; "
            "`confparse.parser` no longer exists. Also give `parse` a `strict=False` flag: with "
            "`strict=True` a non-blank line without `=` raises `ValueError` naming the line.",
            {
                "confparse/parser.py": None,
                "confparse/__init__.py": d('''
    """Parse ``key = value`` configuration text (a single-module package)."""

    __all__ = ["parse"]


    def parse(text, strict=False):
        """Return a dict of the ``key = value`` lines of ``text`` (blank lines skipped).

        With ``strict``, a non-blank line without ``=`` is an error instead of a key with an empty value.
        """
        result = {}
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line:
                continue
            if strict and "=" not in line:
                raise ValueError(f"line {number}: expected key = value, got {line!r}")
            key, _, value = line.partition("=")
            result[key.strip()] = value.strip()
        return result
    '''),
            },
            d("""


            def test_flat_and_strict():
                import importlib.util

                import pytest

                assert importlib.util.find_spec("confparse.parser") is None
                assert parse("a = x\\nb") == {"a": "x", "b": ""}
                with pytest.raises(ValueError, match="line 2"):
                    parse("a = x\\nb", strict=True)
            """),
        ),
    ],
}

# ---- minstats: features that add functions and extend one import line -----------------------
_STATS_CORE = d('''
    """Descriptive statistics on lists of numbers."""


    def mean(xs):
        """Arithmetic mean (``ValueError`` on an empty list)."""
        if not xs:
            raise ValueError("mean of an empty list")
        return sum(xs) / len(xs)


    def median(xs):
        """Middle value (mean of the two middle values for an even count)."""
        s = sorted(xs)
        if not s:
            raise ValueError("median of an empty list")
        mid = len(s) // 2
        return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
    ''')
_STATS_INIT = '"""Minimal statistics."""\n\nfrom minstats.core import mean, median\n'

TASKS["demo_minstats_task/task4"] = {
    "test_file": "tests/test_core.py",
    "files": {
        "minstats/__init__.py": _STATS_INIT,
        "minstats/core.py": _STATS_CORE,
        "tests/__init__.py": "",
        "tests/test_core.py": d("""
            import minstats


            def test_mean_median():
                assert minstats.mean([1, 2, 3, 6]) == 3
                assert minstats.median([3, 1, 2]) == 2
                assert minstats.median([4, 1, 2, 3]) == 2.5
            """),
    },
    "features": [
        (
            "Add mode",
            "Add `mode(xs)` to `minstats.core`, exported from `minstats`: the most frequent value; on a tie, "
            "the smallest of the most frequent values. `ValueError` on an empty list.",
            {
                "minstats/core.py": _STATS_CORE
                + "\n\n"
                + d('''


            def mode(xs):
                """Most frequent value (the smallest one on a tie)."""
                if not xs:
                    raise ValueError("mode of an empty list")
                counts = {}
                for x in xs:
                    counts[x] = counts.get(x, 0) + 1
                top = max(counts.values())
                return min(x for x, c in counts.items() if c == top)
            '''),
                "minstats/__init__.py": _STATS_INIT.replace("mean, median", "mean, median, mode"),
            },
            d("""


            def test_mode():
                assert minstats.mode([1, 2, 2, 3]) == 2
                assert minstats.mode([3, 1, 3, 1]) == 1
            """),
        ),
        (
            "Add variance and stdev",
            "Add `variance(xs)` (sample variance, divisor n - 1) and `stdev(xs)` (its square root) to "
            "`minstats.core`, exported from `minstats`. Both raise `ValueError` for fewer than two values.",
            {
                "minstats/core.py": _STATS_CORE
                + "\n\n"
                + d('''


            def variance(xs):
                """Sample variance (divisor n - 1)."""
                if len(xs) < 2:
                    raise ValueError("variance needs at least two values")
                m = mean(xs)
                return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


            def stdev(xs):
                """Sample standard deviation."""
                return variance(xs) ** 0.5
            '''),
                "minstats/__init__.py": _STATS_INIT.replace("mean, median", "mean, median, stdev, variance"),
            },
            d("""


            def test_variance():
                assert minstats.variance([2, 4, 4, 4, 5, 5, 7, 9]) == 32 / 7
                assert abs(minstats.stdev([1, 3]) - 2 ** 0.5) < 1e-12
            """),
        ),
        (
            "Add percentile",
            "Add `percentile(xs, q)` to `minstats.core`, exported from `minstats`: the `q`-th percentile "
            "(0 <= q <= 100) with linear interpolation between closest ranks (rank = q/100 * (n - 1) on the "
            "sorted values). `ValueError` on an empty list or `q` outside [0, 100].",
            {
                "minstats/core.py": _STATS_CORE
                + "\n\n"
                + d('''


            def percentile(xs, q):
                """``q``-th percentile with linear interpolation between closest ranks."""
                if not xs or not 0 <= q <= 100:
                    raise ValueError("percentile needs values and 0 <= q <= 100")
                s = sorted(xs)
                rank = q / 100 * (len(s) - 1)
                lo = int(rank)
                hi = min(lo + 1, len(s) - 1)
                return s[lo] + (s[hi] - s[lo]) * (rank - lo)
            '''),
                "minstats/__init__.py": _STATS_INIT.replace("mean, median", "mean, median, percentile"),
            },
            d("""


            def test_percentile():
                assert minstats.percentile([1, 2, 3, 4], 50) == 2.5
                assert minstats.percentile([5, 1], 0) == 1
                assert minstats.percentile([5, 1], 100) == 5
            """),
        ),
    ],
}


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@localhost", "GIT_COMMITTER_NAME": "demo",
           "GIT_COMMITTER_EMAIL": "demo@localhost", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
           "PATH": "/usr/bin:/bin:/usr/local/bin"}  # fmt: skip
    r = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return r.stdout


def _write(root: Path, files: dict[str, str | None]) -> None:
    """Write ``files`` under ``root``; ``None`` deletes the file (a feature may remove a module)."""
    for rel, content in files.items():
        p = root / rel
        if content is None:
            p.unlink(missing_ok=True)
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content, encoding="utf-8")


def _diff(base: dict[str, str], changed: dict[str, str | None]) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        _write(repo, base)
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "base")
        _write(repo, changed)
        _git(repo, "add", "-A")
        return _git(repo, "diff", "--cached")


def _feature_md(title: str, body: str, files: list[str]) -> str:
    listed = "\n".join(f"- `{f}`" for f in files)
    return f"**Title**: {title}\n\n**Description**:\n{body}\n\n**Files Modified**\n{listed}\n"


def build(out: Path = HERE) -> None:
    for name, spec in TASKS.items():
        tdir = out / name
        if tdir.exists():
            shutil.rmtree(tdir)
        _write(tdir / "repo", spec["files"])
        (tdir / "run_tests.sh").write_text(RUN_TESTS.format(test_file=spec["test_file"]), encoding="utf-8")
        (tdir / "run_tests.sh").chmod(0o755)
        test_file = spec["test_file"]
        for n, (title, body, changed, tests) in enumerate(spec["features"], start=1):
            fdir = tdir / f"feature{n}"
            fdir.mkdir(parents=True)
            (fdir / "feature.md").write_text(_feature_md(title, body, sorted(changed)), encoding="utf-8")
            patch = _diff(spec["files"], changed)
            if not patch.strip():
                raise ValueError(f"{name} feature{n}: the gold change is empty")
            (fdir / "feature.patch").write_text(patch, encoding="utf-8")
            new_tests = {test_file: spec["files"][test_file] + "\n\n" + tests}
            (fdir / "tests.patch").write_text(_diff(spec["files"], new_tests), encoding="utf-8")


def write_scripted(out: Path = HERE) -> None:
    """``scripted/gold_agent.json``: a scripted agent that applies the gold patch of its feature and submits."""
    sys.path.insert(0, str(HERE.parents[2]))
    from collapse_probe.benchmarks.cooperbench import discover_tasks, write_gold_agent

    write_gold_agent(out / "scripted" / "gold_agent.json", discover_tasks(out))


def check(out: Path = HERE) -> int:
    sys.path.insert(0, str(HERE.parents[2]))
    from collapse_probe.benchmarks.cooperbench import evaluate_pair, load_task, run_patch_test

    bad = 0
    for name in TASKS:
        task = load_task(out / name)
        for fid, f in task.features.items():
            gold = run_patch_test(task, fid, f.patch_path)
            at_base = run_patch_test(task, fid, None)
            if not gold.passed or at_base.passed:
                bad += 1
                print(f"{name} feature{fid}: gold passes={gold.passed}, BASE passes={at_base.passed}")
        for i, j in task.pairs():
            r = evaluate_pair(task, (i, j), (task.features[i].patch_path, task.features[j].patch_path))
            print(f"{name} f{i}+f{j}: merge={r.merge} passed={r.passed} success={r.success}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help=f"directory to write the tasks to (default {HERE})")
    parser.add_argument("--no-check", action="store_true", help="write only; do not run the gold patches' tests")
    args = parser.parse_args(argv)
    build(args.out)
    write_scripted(args.out)
    return 0 if args.no_check else check(args.out)


if __name__ == "__main__":
    raise SystemExit(main())
