"""Config files (``--config FILE``): a YAML or TOML mapping of option values, read with the limits
every reader of the package keeps (size, alias expansion, repeated keys, values no option can hold),
each problem one line naming the file and, where it has one, the line or key."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

MAX_CONFIG_BYTES = 1 << 20
"""A config file holds a few dozen option values; anything past 1 MiB is not one."""


MAX_CONFIG_NODES = 100_000
"""YAML values a config file may expand to, aliases counted each time they are used: a few hundred
bytes of nested aliases (``a: &a [x, x]``, ``b: &b [*a, *a]``, ...) otherwise expand to billions."""


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML or TOML file.

    Raises:
        ConfigError: the file is missing, not a regular file, larger than :data:`MAX_CONFIG_BYTES`,
            has another extension, does not parse, repeats a key, expands (YAML aliases) to more than
            :data:`MAX_CONFIG_NODES` values, is not a mapping, or holds a value no option can take (an
            integer past :data:`~collapse_probe._files.MAX_INT_DIGITS` digits, a number that is not
            finite, a lone surrogate, nesting past the cap), naming the key.
    """
    from collapse_probe._files import FileProblem, MissingFile, read_bytes

    p = Path(path)
    suffix = p.suffix.lower()
    try:
        raw = read_bytes(p, max_bytes=MAX_CONFIG_BYTES, expected="a YAML or TOML file")
    except MissingFile:
        raise ConfigError(f"--config: file {str(p)!r} does not exist") from None
    except FileProblem as exc:
        raise ConfigError(f"--config {exc}") from None
    if suffix not in (".yaml", ".yml", ".toml"):
        raise ConfigError(f"--config: {str(p)!r} must end in .yaml, .yml or .toml")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: not UTF-8 text (byte {exc.start}); expected a YAML or TOML file") from None
    if suffix in (".yaml", ".yml"):
        data = _load_yaml(text, p)
    else:
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover - Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: not valid TOML ({exc})") from None
        except RecursionError:
            raise ConfigError(f"{p}: TOML nested too deeply") from None
        except ValueError:  # an integer past Python's conversion limit
            raise _long_integer(text, p) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of option names to values, got {type(data).__name__}")
    from collapse_probe._files import check_values

    # what the parser accepted but no option can hold: a 4,000-digit integer, 1e999, a lone surrogate
    check_values(data, p, expected="option values (a config file)")
    return data


def _long_integer(text: str, p: Path) -> ConfigError:
    """The error for an integer too long for Python to convert, naming its line (and key) in ``text``."""
    import re

    from collapse_probe._files import MAX_INT_DIGITS

    for n, line in enumerate(text.splitlines(), start=1):
        m = re.search(rf"\d{{{MAX_INT_DIGITS + 1},}}", line.replace("_", ""))
        if m is not None:
            key = re.search(rf"([\w.-]+)[\"']?\s*[:=]\s*[-+]?[\d_]{{{MAX_INT_DIGITS + 1},}}", line)
            at = f" {key.group(1)}:" if key else ""
            return ConfigError(
                f"{p}: line {n}:{at} an integer of {len(m.group(0)):,} digits (at most {MAX_INT_DIGITS}); "
                "expected option values (a config file)"
            )
    return ConfigError(f"{p}: holds an integer too long to convert; expected option values (a config file)")


def _load_yaml(text: str, p: Path) -> Any:
    """``yaml.safe_load`` with the expansion of aliases bounded and repeated keys refused.

    The document is composed into nodes first (aliases there are references, so composing is
    linear in the file), its expanded size is counted with each node's size memoised, and only a
    document of at most :data:`MAX_CONFIG_NODES` values is constructed.
    """
    import yaml

    try:  # the reader checks the characters as it is built: a NUL or another control character fails here
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:
        char, pos = getattr(exc, "character", None), getattr(exc, "position", None)
        what = f"character U+{char:04X} at offset {pos}" if isinstance(char, int) else " ".join(str(exc).split())
        raise ConfigError(
            f"{p}: not valid YAML ({what} is not allowed); expected option values (a config file)"
        ) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_nodes(node, p)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{p}:{where} not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    except RecursionError:
        raise ConfigError(f"{p}: YAML nested deeper than the parser can follow") from None
    except ConfigError:  # a ValueError too, but already the one line (a repeated key, too many values)
        raise
    except ValueError:  # an integer past Python's conversion limit
        raise _long_integer(text, p) from None
    finally:
        loader.dispose()


def _check_yaml_nodes(root: Any, p: Path) -> None:
    import yaml

    size: dict[int, int] = {}
    # post-order without recursion: a node's size is 1 + its children's (an alias counts in full)
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in size:
            continue
        kids: list[Any] = []
        if isinstance(node, yaml.MappingNode):
            kids = [x for pair in node.value for x in pair]
            keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
            dup = sorted({k for k in keys if keys.count(k) > 1})
            if dup:
                raise ConfigError(
                    f"{p}: key {dup[0]!r} is given twice; keep one (the file would otherwise say two things)"
                )
        elif isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        if not children_done:
            if any(id(k) not in size for k in kids):
                stack.append((node, True))
                stack.extend((k, False) for k in kids if id(k) not in size)
                continue
        total = 1 + sum(size.get(id(k), 1) for k in kids)
        if total > MAX_CONFIG_NODES:
            raise ConfigError(
                f"{p}: expands to more than {MAX_CONFIG_NODES:,} values (YAML aliases repeat what they name); "
                "a config file holds option values: write them out"
            )
        size[id(node)] = total
