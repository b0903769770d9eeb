"""Option sources beyond the command line: ``--config FILE`` and backend options ``-M``.

Precedence, highest first: command-line flags, ``$COLLAPSE_PROBE_<OPTION>``, the ``--config`` file,
the built-in defaults. A config file is YAML (``.yaml``/``.yml``) or TOML (``.toml``) holding one
mapping whose keys are the subcommand's long option names, with dashes or underscores
(``max-turns: 3`` or ``max_turns = 3``), or a positional argument's name (``run-dir`` of ``gate``);
a list option takes a list (``sims: [smollm2, vs:smollm2]``) or the command line's ``a,b``; ``null``
is the option's default, as if the key were absent (refused for a required argument). A key
that is not an option of the subcommand, or a value of the wrong type, is one error line naming the
file and the key. Relative paths in a config file (model
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
import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from collapse_probe.cli._env import env_var
from collapse_probe.core._config_files import load_config_file
from collapse_probe.errors import ConfigError

MODEL_ROLES = ("policy", "sim", "judge")
"""Roles ``-M ROLE.key=value`` can address."""

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
        type=_model_arg,
        metavar="ROLE.KEY=VALUE",
        help=f"backend option for the models of ROLE ({', '.join(roles)}), or of every model without ROLE., "
        "e.g. -M sim.concurrency=8 -M policy.tensor_parallel_size=2 (repeatable)",
    )


MAX_MODEL_ARG_VALUES = 1_000
"""YAML values one ``-M`` value may hold: a backend option is a number, a string or a small mapping."""


def _short(text: str, keep: int = 60) -> str:
    """``text`` for a message: at most ``keep`` characters (a 5,000-digit value is not echoed whole)."""
    return text if len(text) <= keep else f"{text[:keep]}... ({len(text):,} characters)"


def _scalar(raw: str, where: str = "-M/--model-arg") -> Any:
    """``raw`` read as YAML (``4``, ``0.5``, ``true``, ``[a, b]``; text that is not YAML stays a string).

    Raises:
        ConfigError: naming ``where``: a YAML alias, nesting or size past the limits, an integer of
            more than 100 digits, a NUL character.
    """
    from collapse_probe.core._config_files import MAX_YAML_DEPTH, YamlSyntaxError, check_no_nul, load_yaml
    from collapse_probe.core._files import check_values

    expected = "a backend option value (a number, a string, true/false or a small list or mapping)"
    try:
        value = load_yaml(raw, where, expected=expected, max_nodes=MAX_MODEL_ARG_VALUES)
    except YamlSyntaxError:
        return raw
    check_values(value, where, expected=expected, max_depth=MAX_YAML_DEPTH)
    check_no_nul(value, where, expected=expected)
    return raw if value is None and raw.strip() not in ("null", "~") else value


def parse_model_args(items: Sequence[str] | None, roles: Sequence[str] = MODEL_ROLES) -> dict[str, dict[str, object]]:
    """``["sim.concurrency=8", "timeout=30"]`` -> ``{"sim": {"concurrency": 8}, "*": {"timeout": 30}}``.

    Raises:
        ConfigError: an item without ``=``, an unknown role, an empty key or a value :func:`_scalar` refuses.
    """
    out: dict[str, dict[str, object]] = {}
    for item in items or []:
        head, eq, raw = item.partition("=")
        if not eq or not head.strip():
            raise ConfigError(f"-M/--model-arg: expected ROLE.key=VALUE or key=VALUE, got {_short(item)!r}")
        role, dot, key = head.strip().rpartition(".")
        role = role if dot else "*"
        if role != "*" and role not in roles:
            raise ConfigError(
                f"-M/--model-arg {_short(item)!r}: unknown role {role!r}; expected one of {', '.join(roles)} (or no role)"
            )
        if not key:
            raise ConfigError(f"-M/--model-arg {_short(item)!r}: empty option name")
        out.setdefault(role, {})[key] = _scalar(raw, f"-M/--model-arg {_short(head.strip())}")
    return out


def _model_arg(item: str) -> str:
    """argparse ``type`` of ``-M``: the item, checked as :func:`parse_model_args` reads it (a bad value
    is refused while the command line is parsed, before any model or file is touched)."""
    try:
        parse_model_args([item])
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(
            str(exc).removeprefix("-M/--model-arg ").removeprefix("-M/--model-arg: ")
        ) from None
    return item


def model_options(args: argparse.Namespace, role: str) -> dict[str, object]:
    """The backend options ``-M`` gives the models of ``role`` (bare ``key=value`` items included)."""
    parsed = parse_model_args(getattr(args, "model_arg", None))
    return {**parsed.get("*", {}), **parsed.get(role, {})}


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


def _coerce(path: Path, key: str, value: Any, action: argparse.Action, shown: str | None = None) -> Any:
    """Check a file value against the option it sets; return the value argparse would have produced
    (``shown``: the key as the file writes it, for the messages)."""
    where = f"{path}: key {shown or key!r}"
    if value is None:  # null: the option's default, as if the key were absent
        if action.required:
            _bad(where, value, "a value (the option is required)")
        return action.default
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction | argparse.BooleanOptionalAction):
        if not isinstance(value, bool):
            _bad(where, value, "true or false")
        return not value if isinstance(action, argparse._StoreFalseAction) else value
    if isinstance(action, argparse._AppendAction):
        return _coerce_list(where, key, value)
    value = _coerce_typed(where, key, value, action.type)
    allowed = getattr(action, "allowed", None) or action.choices
    if allowed is not None and value not in allowed:
        _bad(where, value, f"one of {', '.join(map(str, allowed))}")
    return value


def _bad(where: str, value: Any, expected: str) -> NoReturn:
    """Refuse a config file's value: ``where`` names the file and the key."""
    import reprlib

    got = "null" if value is None else reprlib.repr(value)
    raise ConfigError(f"{where}: expected {expected}, got {got}")


def _coerce_list(where: str, key: str, value: Any) -> list[str]:
    """The value of a repeatable option (``-M``: also a mapping ``{ROLE: {option: value}}``)."""
    if isinstance(value, str):
        value = [value]
    if key == "model_arg" and isinstance(value, dict):
        items = []
        for role, opts in value.items():
            if not isinstance(opts, dict):
                _bad(where, value, "a mapping {ROLE: {option: value}} or a list of 'ROLE.key=value' strings")
            items += [f"{role}.{k}={_yaml_scalar(v)}" for k, v in opts.items()]
        value = items
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _bad(where, value, "a list of strings")
    if key == "model_arg":
        try:
            parse_model_args(value)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return value


def _coerce_typed(where: str, key: str, value: Any, kind: Any) -> Any:
    """The value of an option whose command-line text goes through ``kind`` (``str``, ``int``,
    ``float`` or a parser of the text)."""
    if kind is None or kind is str:
        if not isinstance(value, str):
            _bad(where, value, "a string")
    elif kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | (float if kind is float else int)):
            _bad(where, value, "an integer" if kind is int else "a number")
        value = kind(value)
    elif callable(kind):  # a parser of the command line's text: a list or mapping in the file reaches it as JSON
        strings = isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        if getattr(kind, "comma_list", False) and not strings:
            _bad(where, value, "a list of strings or a comma-separated string")
        try:
            value = kind(json.dumps(value) if isinstance(value, list | dict) else str(value))
        except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
            _bad(where, value, f"a value accepted by --{key.replace('_', '-')} ({exc})")
    return value


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v)


def apply_config_file(sp: argparse.ArgumentParser, command: str, path: str | Path) -> dict[str, object]:
    """Make the file's values the defaults of subparser ``sp`` (flags still override them).

    A key whose ``$COLLAPSE_PROBE_<KEY>`` is set is left to the environment. Returns the applied values.

    Raises:
        ConfigError: an unknown key (with the closest known ones) or a value of the wrong type.
    """
    p = Path(path)
    data = load_config_file(p)
    options = _options_by_key(sp)
    applied: dict[str, object] = {}
    seen: dict[str, object] = {}  # option -> the key of the file that set it
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
        coerced = _coerce(p, key, value, action, str(raw_key))
        var = env_var(action)
        if var is not None and os.environ.get(var) is not None:
            continue  # the environment outranks the file
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
    path = _flag_value(list(argv)[list(argv).index(command) + 1 :], "--config")
    if path is None:
        path = os.environ.get("COLLAPSE_PROBE_CONFIG") if "--config" in _options_of(sub[command]) else None
    return command, path


def _flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The last value ``argv`` gives ``flag`` (``--flag V`` or ``--flag=V``, before any ``--``)."""
    value = None
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(flag + "="):
            value = a.split("=", 1)[1]
    return value


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
    name = _flag_value(argv, "--benchmark")
    if name is None:
        name = os.environ.get("COLLAPSE_PROBE_BENCHMARK")
    if name is None and path is not None:
        try:
            chosen = load_config_file(path).get("benchmark")
        except ConfigError:
            return  # the config file's own error is reported when it is applied
        name = chosen if isinstance(chosen, str) else None
    if isinstance(name, str) and name:
        from collapse_probe.cli._env import apply_env
        from collapse_probe.cli._flags import add_benchmark_options

        add_benchmark_options(sp, name)
        apply_env(sp)


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
    if command is not None:  # what the command line itself gave (not a config file, the environment or a default)
        actions = _subparsers(parser)[command]._actions
        args.given_on_command_line = frozenset(
            a.dest for a in actions for o in a.option_strings if any(x == o or x.startswith(o + "=") for x in argv)
        )
    return args


def _unrecognized(parser: argparse.ArgumentParser, command: str | None, extra: Sequence[str]) -> None:
    """Unknown arguments end the program with one error line naming each unknown flag's nearest known
    flags (``--sampels``: did you mean ``--samples``?); exit status 2."""

    sp = _subparsers(parser).get(command) if command else None
    target = sp or parser
    known = sorted({o for a in target._actions for o in a.option_strings if o.startswith("--") and o != "--help"})
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
    target.error(message)
