"""The base of every results model: typed known fields, extra fields kept, JSON out exactly as written.

A results model describes one ``results.json`` kind. Its known fields are typed and documented where
they are declared; fields it does not know (a plugin benchmark's, a newer version's) are kept as
they are (``extra="allow"``), so reading and writing a file through a model never drops data.
Three conventions keep what is written the same as before the models existed:

- ``exclude_unset``: a field absent from the data stays absent in the output (``compare_vs`` only
  when it was run), never a new ``null``;
- ``NaN`` and ``Infinity`` are written as the JSON extension Python reads back, not turned into
  ``null`` (a typed number would then fail its own schema);
- numpy scalars and arrays become Python numbers and lists.

Readers parse with :meth:`ResultsModel.parse` (strict: ``"0.5"`` is not a number, ``true`` is not a
count), writers build with :meth:`ResultsModel.build` (the pipelines' own values: tuples, numpy
numbers), and both write :meth:`ResultsModel.to_json`.
"""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, ValidationError

M = TypeVar("M", bound="ResultsModel")

Finite = Annotated[float, AllowInfNan(False)]
"""A finite number (``NaN`` and infinities refused)."""
Count = Annotated[int, Field(ge=0)]
"""A count: an integer >= 0 (a bool is not one when parsed strictly)."""
Interval = Annotated[list[float | None], Field(min_length=2, max_length=2)]
"""``[low, high]``; a ``null`` end is unbounded on that side (or not defined)."""
FiniteInterval = Annotated[list[Finite], Field(min_length=2, max_length=2)]
"""``[low, high]`` of two finite numbers."""
JSON = Any
"""Any JSON value (a part of the file whose shape belongs to another component, e.g. a benchmark)."""


def jsonable(o: Any) -> Any:
    """Fallback of :meth:`ResultsModel.to_json` for values pydantic does not know (numpy, paths)."""
    tolist = getattr(o, "tolist", None)
    if callable(tolist):  # numpy arrays and scalars
        return tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


class ResultsModel(BaseModel):
    """A part of a ``results.json`` (see the module docstring for the conventions)."""

    model_config = ConfigDict(
        extra="allow",
        ser_json_inf_nan="constants",
        use_attribute_docstrings=True,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,  # ``schema_`` is written as ``schema`` (BaseModel has a ``schema`` method)
    )

    @classmethod
    def parse(cls: type[M], data: Any) -> M:
        """Read JSON data (as loaded by :func:`json.loads`) strictly.

        Raises:
            pydantic.ValidationError: a known field holds a value of the wrong type; format it with
                :func:`describe_error`.
        """
        return cls.model_validate(data, strict=True)

    @classmethod
    def build(cls: type[M], data: Any) -> M:
        """Build from a pipeline's values (tuples, numpy numbers are accepted and converted)."""
        return cls.model_validate(data)

    @classmethod
    def typed(cls: type[M], results: Any) -> M:
        """The typed results a reader was given: the model itself, or a pipeline's JSON object read
        through it (what :meth:`to_json` wrote, so the readers of both print the same)."""
        return results if isinstance(results, cls) else cls.build(results)

    def _key(self, key: str) -> str | None:
        """The attribute of a JSON key (``schema`` -> ``schema_``), when the key is in the file."""
        if self.model_extra and key in self.model_extra:
            return key
        for name, info in type(self).model_fields.items():
            if (info.alias or name) == key:
                return name if name in self.model_fields_set else None
        return None

    def __getitem__(self, key: str) -> Any:
        """Read access by the JSON key (``results["schema"]``, whose attribute is ``schema_``), as the
        ``results.json`` object reads; a field absent from the file is a :class:`KeyError`."""
        name = self._key(key)
        if name is None:
            raise KeyError(key)
        return getattr(self, name)

    def get(self, key: str, default: Any = None) -> Any:
        """``results.get(key, default)`` as on the JSON object."""
        name = self._key(key)
        return default if name is None else getattr(self, name)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._key(key) is not None

    def to_json(self) -> dict[str, Any]:
        """The JSON object, as ``results.json`` holds it (unset fields left out, ``NaN`` kept)."""
        return self.model_dump(mode="json", exclude_unset=True, fallback=jsonable)


def error_path(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> str:
    """Where a validation error is, as a reader writes it: ``cells[0].task_rewards['t1'][2]``.

    The location is walked through ``model``'s field types, so a field is ``.name``, a mapping key
    ``['key']`` and a list index ``[i]``.
    """
    out = ""
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp)
        origin = get_origin(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and part in tp.model_fields:
            out += f".{part}" if out else str(part)
            tp = tp.model_fields[str(part)].annotation
        elif origin is dict:
            out += f"[{part!r}]"
            tp = get_args(tp)[1] if get_args(tp) else None
        elif origin is list or isinstance(part, int):
            out += f"[{part}]"
            tp = get_args(tp)[0] if origin is list and get_args(tp) else None
        else:  # an extra field, or a part of an untyped value
            out += f".{part}" if out else str(part)
            tp = None
    return out


def _unwrap(tp: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` -> ``X`` (the first non-None member of a union)."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            tp = members[0] if len(members) == 1 else None
        else:
            return tp


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "string_type": "a string",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dataclass_type": "an object",
    "missing": "a value (the field is required)",
}


def expected(err: Any) -> str:
    """What a pydantic error says was expected, in words (``an integer >= 0``, ``one of 'a', 'b'``)."""
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        op = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}[kind]
        bound = next(iter(ctx.values()))
        return f"a value {op} {bound}"
    if kind == "literal_error":
        return f"one of {ctx.get('expected')}"
    if kind in ("too_short", "too_long"):
        return f"{ctx.get('min_length', ctx.get('max_length'))} items" if kind == "too_short" else err["msg"].lower()
    return _EXPECTED.get(kind, err["msg"][0].lower() + err["msg"][1:])


def describe_error(exc: ValidationError, model: type[BaseModel] | None = None, where: str = "results") -> str:
    """The first error of a validation as one line: ``{where} field cells[0].n is '8'; expected an integer``."""
    err = exc.errors(include_url=False)[0]
    path = error_path(model, tuple(err["loc"]))
    if err["type"] == "missing":
        return f"{where} field {path!r} is missing"
    return f"{where} field {path} is {err['input']!r}; expected {expected(err)}"
