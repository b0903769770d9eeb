"""Config files (``--config FILE``): a YAML or TOML mapping of option values, read with the limits
every reader of the package keeps (size, alias expansion, repeated keys, values no option can hold),
each problem one line naming the file and, where it has one, the line or key."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError

MAX_CONFIG_BYTES = 1 << 20
"""A config file holds a few dozen option values; anything past 1 MiB is not one."""


MAX_CONFIG_NODES = 100_000
"""YAML values (nodes) a config file may hold; aliases are refused (:func:`load_yaml`)."""


def load_config_file(path: str | Path) -> dict[object, object]:
    """The mapping in a YAML or TOML file (option name -> value; a YAML key may be a number or a boolean).

    Raises:
        ConfigError: the file is missing, not a regular file, larger than :data:`MAX_CONFIG_BYTES`,
            has another extension, does not parse, repeats a key, uses a YAML alias, holds more than
            :data:`MAX_CONFIG_NODES` values, is not a mapping, or holds a value no option can take (an
            integer past :data:`~collapse_probe.core._files.MAX_INT_DIGITS` digits, a number that is not
            finite, a lone surrogate, a NUL character, nesting past the cap), naming the key.
    """
    from collapse_probe.core._files import FileProblem, MissingFile, read_bytes

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
    from collapse_probe.core._files import check_values

    # what the parser accepted but no option can hold: a 4,000-digit integer, 1e999, a lone surrogate
    check_values(data, p, expected="option values (a config file)")
    check_no_nul(data, str(p), expected="option values (a config file)")
    return data


def check_no_nul(value: Any, where: str, *, expected: str) -> None:
    """Refuse a string (or key) of ``value`` holding a NUL character (YAML's ``"\\0"``, TOML's
    ``"\\u0000"``): no path, model spec or name can hold one (the OS refuses it in a path).

    Raises:
        ConfigError: naming ``where`` and the key.
    """
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        v, at = stack.pop()
        if isinstance(v, str) and "\x00" in v:
            raise ConfigError(f"{where}: {at or 'the value'}: holds a NUL character (\\0); expected {expected}")
        if isinstance(v, dict):
            for k, child in v.items():
                key = f"{at}.{k}" if at else str(k)
                if isinstance(k, str) and "\x00" in k:
                    raise ConfigError(f"{where}: a key holds a NUL character (\\0); expected {expected}")
                stack.append((child, key))
        elif isinstance(v, list | tuple):
            stack.extend((child, f"{at}[{i}]") for i, child in enumerate(v))


def _long_integer(text: str, p: Path) -> ConfigError:
    """The error for an integer too long for Python to convert, naming its line (and key) in ``text``."""
    import re

    from collapse_probe.core._files import MAX_INT_DIGITS

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
    """``yaml.safe_load`` without aliases, with repeated keys refused (see :func:`load_yaml`)."""
    return load_yaml(
        text, str(p), expected="option values (a config file)", on_long_integer=lambda: _long_integer(text, p)
    )


class YamlSyntaxError(ConfigError):
    """Text that is not YAML at all (a ``-M`` value then stays the string it is)."""


MAX_YAML_DEPTH = 100
"""Nesting of sequences and mappings in a YAML value of the CLI (a config file, a ``-M`` value)."""


def load_yaml(
    text: str,
    where: str,
    *,
    expected: str,
    max_nodes: int = MAX_CONFIG_NODES,
    on_long_integer: Callable[[], ConfigError] | None = None,
    core_booleans: bool = False,
    aliases: bool = False,
) -> Any:
    """The value of a YAML document from the user (a ``--config`` file, a ``-M`` value), every way it can
    be unusable one :class:`ConfigError` naming ``where``.

    Aliases (``*name``) are refused where they occur, before anything is expanded: a few hundred bytes
    of nested aliases otherwise expand to billions of values (a "billion laughs"), and an alias inside
    the node it names (``&a [*a]``) to an endless one; a config file holds option values and needs
    neither. Also refused: a character YAML does not allow (a NUL byte), more than ``max_nodes`` nodes,
    nesting past :data:`MAX_YAML_DEPTH`, a repeated key, an integer too long to convert.

    ``core_booleans`` reads only ``true``/``false`` as booleans (YAML 1.2's core schema): YAML 1.1 also
    reads ``yes``, ``no``, ``on`` and ``off``, which loses the text of a user's answer keys (a scenario
    file's ``values: {YES: 1, NO: 0}``).

    ``aliases`` admits aliases (a scenario file repeats an agent's instructions) at the cost of the values
    they stand for: ``max_nodes`` and the nesting limit count every alias written out, and an alias inside
    the value it names is refused, so neither a billion laughs nor a cycle gets past the composer.
    """
    import yaml

    try:  # the reader checks the characters as it is built: a NUL or another control character fails here
        loader = _no_alias_loader(core_booleans, aliases)(text)
    except yaml.YAMLError as exc:
        char, pos = getattr(exc, "character", None), getattr(exc, "position", None)
        what = f"character U+{char:04X} at offset {pos}" if isinstance(char, int) else " ".join(str(exc).split())
        raise YamlSyntaxError(f"{where}: not valid YAML ({what} is not allowed); expected {expected}") from None
    loader.where, loader.expected, loader.max_nodes = where, expected, max_nodes
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_nodes(node, where)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise YamlSyntaxError(f"{where}:{at} not valid YAML ({problem}); expected {expected}") from None
    except RecursionError:
        raise ConfigError(
            f"{where}: YAML nested deeper than {MAX_YAML_DEPTH} levels (sequences and mappings); expected {expected}"
        ) from None
    except ConfigError:  # a ValueError too, but already the one line (an alias, a repeated key, too many values)
        raise
    except ValueError:  # an integer past Python's conversion limit
        if on_long_integer is not None:
            raise on_long_integer() from None
        raise ConfigError(
            f"{where}: holds an integer too long to convert (at most {_max_int_digits()} digits); expected {expected}"
        ) from None
    finally:
        loader.dispose()


def _max_int_digits() -> int:
    from collapse_probe.core._files import MAX_INT_DIGITS

    return MAX_INT_DIGITS


def _expanded(node: Any, memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(values, nesting) of a composed YAML node with every alias in it written out, memoised per node:
    what a reader walking the loaded value meets (an alias shares its node, the walk does not)."""
    import yaml

    key = id(node)
    if key not in memo:
        if isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            kids = [x for pair in node.value for x in pair]
        else:
            kids = []
        sizes = [_expanded(k, memo) for k in kids]
        memo[key] = (1 + sum(n for n, _ in sizes), 1 + max((d for _, d in sizes), default=0))
    return memo[key]


@functools.cache
def _no_alias_loader(core_booleans: bool = False, aliases: bool = False) -> type:
    import re

    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        """A safe loader whose composer refuses every alias (or, with ``aliases``, counts each alias as the
        values it stands for) and counts nodes and nesting as it goes."""

        where = "YAML"
        expected = "option values"
        max_nodes = MAX_CONFIG_NODES
        _nodes = 0
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                mark = event.start_mark
                if not aliases:
                    raise ConfigError(
                        f"{self.where}: line {mark.line + 1}: YAML alias *{event.anchor} is not allowed "
                        f"(aliases repeat what they name, without limit); write the value out; "
                        f"expected {self.expected}"
                    )
                self._count_alias(event.anchor, mark)
                return super().compose_node(parent, index)
            self._nodes += 1
            if self._nodes > self.max_nodes:
                raise ConfigError(f"{self.where}: more than {self.max_nodes:,} YAML values; expected {self.expected}")
            self._depth += 1
            try:
                if self._depth > MAX_YAML_DEPTH:
                    mark = self.peek_event().start_mark
                    raise ConfigError(
                        f"{self.where}: line {mark.line + 1}: YAML nested deeper than {MAX_YAML_DEPTH} levels "
                        f"(sequences and mappings); expected {self.expected}"
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def _count_alias(self, anchor: str, mark: Any) -> None:
            """An alias costs the values and nesting it stands for: a few hundred bytes of nested aliases
            (a "billion laughs") stand for billions of values, an alias inside what it names for endless ones."""
            target = self.anchors.get(anchor)
            if target is None:
                return  # the composer's own error: an alias of no anchor
            memo: dict[int, tuple[int, int]] = self.__dict__.setdefault("_memo", {})
            if target.end_mark is None:  # the composer sets it when the node is complete
                raise ConfigError(
                    f"{self.where}: line {mark.line + 1}: YAML alias *{anchor} stands inside the value it names "
                    f"(an endless value); write the value out; expected {self.expected}"
                )
            nodes, depth = _expanded(target, memo)
            self._nodes += nodes
            if self._nodes > self.max_nodes:
                raise ConfigError(
                    f"{self.where}: line {mark.line + 1}: more than {self.max_nodes:,} YAML values once aliases "
                    f"are written out (*{anchor} stands for {nodes:,}); expected {self.expected}"
                )
            if self._depth + depth > MAX_YAML_DEPTH:
                raise ConfigError(
                    f"{self.where}: line {mark.line + 1}: YAML nested deeper than {MAX_YAML_DEPTH} levels once "
                    f"*{anchor} is written out; expected {self.expected}"
                )

    if core_booleans:
        NoAliasLoader.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        NoAliasLoader.add_implicit_resolver(
            "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
        )
    return NoAliasLoader


def _check_yaml_nodes(root: Any, where: str) -> None:
    """Refuse a mapping that repeats a key (no aliases reach here: the composer refused them)."""
    import yaml

    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
            dup = sorted({k for k in keys if keys.count(k) > 1})
            if dup:
                raise ConfigError(
                    f"{where}: key {dup[0]!r} is given twice; keep one (the file would otherwise say two things)"
                )
            stack.extend(x for pair in node.value for x in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
