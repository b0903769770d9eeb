"""Option sources beyond the command line: ``--config FILE``, backend options ``-M`` and options
generated from the typed config models.

Precedence, highest first: command-line flags, ``$COLLAPSE_PROBE_<OPTION>``, the ``--config`` file,
the built-in defaults. A config file is YAML (``.yaml``/``.yml``) or TOML (``.toml``) holding one
mapping whose keys are the subcommand's long option names, with dashes or underscores
(``max-turns: 3`` or ``max_turns = 3``), or a positional argument's name (``run-dir`` of ``gate``);
lists are accepted for the comma-separated spec options (``sims: [smollm2, vs:smollm2]``). A key that is not an option of the subcommand, or a value of the
wrong type, is one error line naming the file and the key. Relative paths in a config file (model
files, ``out``, ``personas``) resolve against the working directory, exactly as on the command line,
not against the file's directory.

Backend options: ``-M ROLE.key=VALUE`` (repeatable; ``--model-arg``) passes ``key=VALUE`` to the
model backend of every participant in ROLE — ``policy``, ``sim`` or ``judge`` — and a bare
``key=VALUE`` to every model of the run. VALUE is read as a YAML scalar (``4`` is an integer,
``0.5`` a number, ``true`` a boolean, anything else a string). In a config file the same options
are a list of such strings or a mapping ``{ROLE: {key: value}}``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import json
import os
import sys
import textwrap
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from collapse_probe.errors import ConfigError

MODEL_ROLES = ("policy", "sim", "judge")
"""Roles ``-M ROLE.key=value`` can address."""

LIST_KEYS = frozenset({"policies", "sims", "sim", "heldout", "lora_targets"})
"""Options given on the command line as comma-separated lists; a config file may give a list."""

_NOT_FILE_KEYS = frozenset({"help", "config", "command"})


# ------------------------------------------------------------------------------------------- -M / --model-arg


def add_model_args(p: argparse.ArgumentParser, roles: Sequence[str] = MODEL_ROLES) -> None:
    """Add ``-M / --model-arg ROLE.key=VALUE`` (repeatable) to a subcommand."""
    p.add_argument(
        "-M",
        "--model-arg",
        dest="model_arg",
        action="append",
        default=None,
        metavar="ROLE.KEY=VALUE",
        help=f"backend option for the models of ROLE ({', '.join(roles)}), or of every model without ROLE., "
        "e.g. -M sim.concurrency=8 -M policy.tensor_parallel_size=2 (repeatable)",
    )


def _scalar(raw: str) -> Any:
    import yaml

    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return raw if value is None and raw.strip() not in ("null", "~") else value


def parse_model_args(items: Sequence[str] | None, roles: Sequence[str] = MODEL_ROLES) -> dict[str, dict[str, Any]]:
    """``["sim.concurrency=8", "timeout=30"]`` -> ``{"sim": {"concurrency": 8}, "*": {"timeout": 30}}``.

    Raises:
        ConfigError: an item without ``=``, an unknown role or an empty key.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items or []:
        head, eq, raw = item.partition("=")
        if not eq or not head.strip():
            raise ConfigError(f"-M/--model-arg: expected ROLE.key=VALUE or key=VALUE, got {item!r}")
        role, dot, key = head.strip().rpartition(".")
        role = role if dot else "*"
        if role != "*" and role not in roles:
            raise ConfigError(
                f"-M/--model-arg {item!r}: unknown role {role!r}; expected one of {', '.join(roles)} (or no role)"
            )
        if not key:
            raise ConfigError(f"-M/--model-arg {item!r}: empty option name")
        out.setdefault(role, {})[key] = _scalar(raw)
    return out


def model_options(args: argparse.Namespace, role: str) -> dict[str, Any]:
    """The backend options ``-M`` gives the models of ``role`` (bare ``key=value`` items included)."""
    parsed = parse_model_args(getattr(args, "model_arg", None))
    return {**parsed.get("*", {}), **parsed.get(role, {})}


# -------------------------------------------------------------------------------- options from config models


def field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings of a config class (the string literal under each field), by field name."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _scalar_type(annotation: Any) -> tuple[type | None, bool]:
    """``(int | float | str | bool, optional)`` of a field annotation; ``(None, _)`` for other types."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _scalar_type(args[0])[0], True
        return None, True
    if annotation in (int, float, str, bool):
        return annotation, False
    return None, False


def _short_help(doc: str) -> str:
    first = doc.split(". ")[0].rstrip(".").replace("``", "")
    return first.replace("%", "%%")


def add_config_options(
    p: argparse.ArgumentParser, cls: type, *, skip: Sequence[str] = (), env: Any = None
) -> list[str]:
    """Add ``--field-name`` for every scalar field of config ``cls`` (a pydantic model) not already an option of ``p``.

    The type, default and help come from the field's annotation, default and attribute docstring;
    ``$COLLAPSE_PROBE_<FIELD>`` overrides the default as for hand-written options. Returns the names of
    the fields added (read them back with :func:`config_values`).
    """
    from collapse_probe.cli._env import env as env_default

    env = env or env_default
    taken = {a.dest for a in p._actions} | {
        s.lstrip("-").replace("-", "_") for a in p._actions for s in a.option_strings
    }
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    added: list[str] = []
    for name, info in cls.model_fields.items():  # type: ignore[attr-defined]
        if name in taken or name in skip or info.is_required():
            continue
        kind, _optional = _scalar_type(hints[name])
        if kind is None:
            continue
        flag = name.replace("_", "-")
        default = info.default
        doc = _short_help(docs.get(name, ""))
        if kind is bool:
            if default is not False:
                continue  # a flag that could only switch off would read backwards; keep those hand-written
            p.add_argument(f"--{flag}", dest=name, action="store_true", default=env(flag, False), help=doc)
        else:
            shown = "none" if default is None else default
            p.add_argument(
                f"--{flag}",
                dest=name,
                type=kind,
                default=env(flag, default, kind),
                help=f"{doc} (default {shown})" if doc else f"default {shown}",
            )
        added.append(name)
    return added


def config_values(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The parsed values of the generated options ``names``."""
    return {n: getattr(args, n) for n in names}


# ----------------------------------------------------------------------------------------------- --config FILE


def add_config_option(p: argparse.ArgumentParser) -> None:
    """Add ``--config FILE`` (read before the other options; see the module docstring)."""
    p.add_argument(
        "--config",
        metavar="FILE",
        default=os.environ.get("COLLAPSE_PROBE_CONFIG"),
        help="YAML or TOML file of option values (keys: long option names); flags and $COLLAPSE_PROBE_* override "
        "it; relative paths in it resolve against the working directory, as on the command line",
    )


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


def _options_by_key(sp: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    keys: dict[str, argparse.Action] = {}
    for action in sp._actions:
        if isinstance(action, argparse._HelpAction | argparse._VersionAction):
            continue
        longs = [s for s in action.option_strings if s.startswith("--")]
        for name in longs or ([action.dest] if not action.option_strings else []):
            key = name.lstrip("-").replace("-", "_")
            if key not in _NOT_FILE_KEYS:
                keys[key] = action
    return keys


def _type_name(kind: Any) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(kind, "a value")


def _coerce(path: Path, key: str, value: Any, action: argparse.Action) -> Any:
    """Check a file value against the option it sets; return the value argparse would have produced."""

    def bad(expected: str) -> NoReturn:
        import reprlib

        raise ConfigError(f"{path}: key {key!r}: expected {expected}, got {reprlib.repr(value)}")

    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        if not isinstance(value, bool):
            bad("true or false")
        return value if isinstance(action, argparse._StoreTrueAction) else not value
    if isinstance(action, argparse._AppendAction):
        if isinstance(value, str):
            value = [value]
        if key == "model_arg" and isinstance(value, dict):
            items = []
            for role, opts in value.items():
                if not isinstance(opts, dict):
                    bad("a mapping {ROLE: {option: value}} or a list of 'ROLE.key=value' strings")
                items += [f"{role}.{k}={_yaml_scalar(v)}" for k, v in opts.items()]
            value = items
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            bad("a list of strings")
        if key == "model_arg":
            try:
                parse_model_args(value)
            except ConfigError as exc:
                raise ConfigError(f"{path}: key {key!r}: {exc}") from None
        return value
    kind = action.type
    if kind is None or kind is str:
        if key in LIST_KEYS and isinstance(value, list):
            if not value or not all(isinstance(v, str) and v.strip() for v in value):
                bad("a non-empty list of strings")
            value = ",".join(value)
        elif value is None and action.default is None:
            return None
        elif not isinstance(value, str):
            bad("a list of strings or a comma-separated string" if key in LIST_KEYS else "a string")
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if value is None and action.default is None:
                return None
            bad("an integer")
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            if value is None and action.default is None:
                return None
            bad("a number")
        value = float(value)
    elif callable(kind):  # a custom parser function: give it the text the command line would have
        try:
            # a list or mapping in the file reaches a list / JSON option's parser as JSON text
            value = kind(json.dumps(value) if isinstance(value, list | dict) else str(value))
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            bad(f"a value accepted by --{key.replace('_', '-')} ({exc})")
    if action.choices is not None and value not in action.choices:
        bad(f"one of {', '.join(map(str, action.choices))}")
    return value


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v)


def _env_set(key: str) -> bool:
    return os.environ.get("COLLAPSE_PROBE_" + key.upper()) is not None


def apply_config_file(sp: argparse.ArgumentParser, command: str, path: str | Path) -> dict[str, Any]:
    """Make the file's values the defaults of subparser ``sp`` (flags still override them).

    A key whose ``$COLLAPSE_PROBE_<KEY>`` is set is left to the environment. Returns the applied values.

    Raises:
        ConfigError: an unknown key (with the closest known ones) or a value of the wrong type.
    """
    p = Path(path)
    data = load_config_file(p)
    options = _options_by_key(sp)
    applied: dict[str, Any] = {}
    seen: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key).replace("-", "_")
        if key in seen:
            raise ConfigError(
                f"{p}: keys {seen[key]!r} and {raw_key!r} both set --{key.replace('_', '-')}; keep one "
                "(dashes and underscores name the same option)"
            )
        seen[key] = raw_key
        action = options.get(key)
        if action is None:
            close = difflib.get_close_matches(key, list(options), n=3, cutoff=0.6)
            hint = f" (did you mean {' or '.join(repr(c.replace('_', '-')) for c in close)}?)" if close else ""
            raise ConfigError(f"{p}: unknown key {raw_key!r} for collapse-probe {command}{hint}")
        coerced = _coerce(p, key, value, action)
        if _env_set(key):
            continue
        applied[action.dest] = coerced
        action.required = False
        if not action.option_strings and action.nargs is None:
            action.nargs = "?"  # a positional the file gives may be left off the command line
    sp.set_defaults(**applied)
    return applied


def _command_and_config(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[str | None, str | None]:
    sub = _subparsers(parser)
    command = next((a for a in argv if a in sub), None)
    if command is None:
        return None, None
    rest = list(argv)[list(argv).index(command) + 1 :]
    path = None
    for i, a in enumerate(rest):
        if a == "--":
            break
        if a == "--config" and i + 1 < len(rest):
            path = rest[i + 1]
        elif a.startswith("--config="):
            path = a.split("=", 1)[1]
    if path is None:
        path = os.environ.get("COLLAPSE_PROBE_CONFIG") if "--config" in _options_of(sub[command]) else None
    return command, path


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options_of(sp: argparse.ArgumentParser) -> set[str]:
    return {s for a in sp._actions for s in a.option_strings}


def _add_chosen_benchmark_options(sp: argparse.ArgumentParser, argv: Sequence[str], path: str | None) -> None:
    """Give ``sp`` the flags of the benchmark its command line chooses (``--benchmark``, else
    ``$COLLAPSE_PROBE_BENCHMARK``, else the ``--config`` file's ``benchmark``), before parsing."""
    if "--benchmark" not in _options_of(sp):
        return
    name = None
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a == "--benchmark" and i + 1 < len(argv):
            name = argv[i + 1]
        elif a.startswith("--benchmark="):
            name = a.split("=", 1)[1]
    if name is None:
        name = os.environ.get("COLLAPSE_PROBE_BENCHMARK")
    if name is None and path is not None:
        try:
            name = load_config_file(path).get("benchmark")
        except ConfigError:
            return  # the config file's own error is reported when it is applied
    if isinstance(name, str) and name:
        from collapse_probe.cli._benchmark_flags import add_benchmark_options

        add_benchmark_options(sp, name)


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``parser.parse_args`` with the subcommand's ``--config FILE`` applied first (see the module docstring).

    A bad config file ends the program with one error line and exit status 2.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    command, path = _command_and_config(parser, argv)
    if command is not None:
        _add_chosen_benchmark_options(_subparsers(parser)[command], argv, path)
    if command is not None and path is not None:
        sp = _subparsers(parser)[command]
        try:
            apply_config_file(sp, command, path)
        except ConfigError as exc:
            print(f"collapse-probe {command}: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        except Exception as exc:  # a config file the checks did not foresee: still one line, exit 2
            print(f"collapse-probe {command}: error: --config {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
    args, extra = parser.parse_known_args(argv)
    if extra:
        _unrecognized(parser, command, extra)
    return args


def _unrecognized(parser: argparse.ArgumentParser, command: str | None, extra: Sequence[str]) -> None:
    """Unknown arguments end the program with the subcommand's usage and one error line naming each
    unknown flag's nearest known flags (``--sampels``: did you mean ``--samples``?); exit status 2."""

    sp = _subparsers(parser).get(command) if command else None
    target = sp or parser
    known = sorted({o for a in target._actions for o in a.option_strings if o.startswith("--")})
    hints = []
    for arg in extra:
        if not arg.startswith("-"):
            continue
        flag = arg.split("=", 1)[0]
        close = difflib.get_close_matches(flag, known, n=2, cutoff=0.6)
        if close:
            hints.append(f"{flag}: did you mean {' or '.join(close)}?")
    message = f"unrecognized arguments: {' '.join(extra)}"
    if hints:
        message += "; " + "; ".join(hints)
    elif command:
        message += f" (collapse-probe {command} --help lists the options)"
    target.error(message)
