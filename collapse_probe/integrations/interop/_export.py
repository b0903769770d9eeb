"""``export``: a finished run directory as an inspect eval log, parquet tables or a Hugging Face dataset."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypedDict

from collapse_probe.errors import ConfigError, require

FORMATS = ("inspect", "parquet", "hf")
SCHEMA_FILE = "schema.json"
"""Written beside the parquet tables: each table's columns, their Arrow types and the JSON columns."""


class TableSchema(TypedDict):
    """One table's entry in ``schema.json``."""

    rows: int
    columns: dict[str, str]
    """Column -> its Arrow type."""
    json_columns: list[str]
    """The columns that hold JSON text (nested values)."""


def export_parquet(run: Any, out: str | Path) -> list[Path]:
    """One parquet file per table (``conversations.parquet``, ...) and ``schema.json`` in ``out``, a
    new or empty directory (written aside and renamed into place: nothing is overwritten, and of
    concurrent exports onto one ``out`` one wins)."""
    require("pyarrow", "parquet", "export --to parquet")
    import pyarrow.parquet as pq

    from collapse_probe.core._output import check_output_path, dumps_json, write_output_dir
    from collapse_probe.integrations.interop._tables import json_columns, run_tables

    check_output_path(out, directory=True)
    tables = run_tables(run)
    names: list[str] = []

    def fill(d: Path) -> None:
        schema: dict[str, TableSchema] = {}
        for name, table in tables.items():
            pq.write_table(table, str(d / f"{name}.parquet"))
            names.append(f"{name}.parquet")
            schema[name] = {
                "rows": table.num_rows,
                "columns": {fld.name: str(fld.type) for fld in table.schema},
                "json_columns": json_columns(table.schema),
            }
        (d / SCHEMA_FILE).write_text(dumps_json(schema, where=SCHEMA_FILE, indent=2) + "\n", encoding="utf-8")
        names.append(SCHEMA_FILE)

    p = write_output_dir(out, fill)
    return [p / n for n in names]


def hf_dataset(run: Any) -> Any:
    """The run's tables as a ``datasets.DatasetDict``, one split per table."""
    datasets = require("datasets", "hf", "export --to hf")
    from collapse_probe.integrations.interop._tables import run_tables

    return datasets.DatasetDict(
        {name: datasets.Dataset(datasets.table.InMemoryTable(t)) for name, t in run_tables(run).items()}
    )


def export_hf(run: Any, out: str | Path, push_to_hub: str | None = None, progress: bool = True) -> list[Path]:
    """Save the run's tables as a Hugging Face ``DatasetDict`` in ``out`` (``datasets.load_from_disk``
    reads it); with ``push_to_hub`` also push each table to that Hub repository as a configuration of
    the same name (needs a token: ``$HF_TOKEN`` or ``huggingface-cli login``; never in tests)."""
    from collapse_probe.core._output import check_output_path, write_output_dir

    check_output_path(out, directory=True)
    dd = hf_dataset(run)
    if not progress:
        import datasets

        datasets.disable_progress_bars()
    p = write_output_dir(out, lambda d: dd.save_to_disk(str(d)))
    if push_to_hub:
        _push(dd, push_to_hub)
    return [p]


def _push(dd: Any, repo: str) -> None:
    """Push each table as a configuration of ``repo``; the token comes from the environment or the
    Hugging Face login, is never printed, and a missing one is one error line."""
    from huggingface_hub import get_token

    if not (os.environ.get("HF_TOKEN") or get_token()):
        raise ConfigError(
            f"--push-to-hub {repo}: no Hugging Face token; set $HF_TOKEN or run `huggingface-cli login` "
            "(the dataset was saved locally)"
        )
    for name, ds in dd.items():
        try:
            ds.push_to_hub(repo, config_name=name, split="train")
        except Exception as exc:  # the Hub's HTTP and auth errors: one line, the token never in it
            raise ConfigError(f"--push-to-hub {repo}: pushing table {name} failed ({type(exc).__name__})") from None


def export_run(run_dir: str | Path, to: str, out: str | Path, *, push_to_hub: str | None = None,
               progress: bool = True) -> list[Path]:  # fmt: skip
    """Export a finished ``play``, ``audit``, ``crossplay`` or ``train`` run.

    Args:
        run_dir: the run directory.
        to: ``inspect`` (an eval log file ``out``), ``parquet`` (a directory of tables) or ``hf``
            (a ``datasets`` dataset saved to the directory ``out``).
        out: where to write.
        push_to_hub: with ``hf``: also push to this Hub repository (``owner/name``).
        progress: show the ``datasets`` progress bars.

    Returns:
        The files (or the dataset directory) written.

    Raises:
        ConfigError: an unknown format, a run that is not finished, or an output that exists.
    """
    from collapse_probe.integrations.interop._rundata import load_run_data

    if to not in FORMATS:
        raise ConfigError(f"--to must be one of {', '.join(FORMATS)}, got {to!r}")
    if push_to_hub and to != "hf":
        raise ConfigError(f"--push-to-hub needs --to hf, got --to {to}")
    from collapse_probe.core._output import check_output_path

    check_output_path(out, directory=to != "inspect")  # before reading: a refused --out costs nothing
    run = load_run_data(run_dir)
    if to == "inspect":
        from collapse_probe.integrations.interop._inspect import write_inspect_log

        return write_inspect_log(run, out)
    if to == "parquet":
        return export_parquet(run, out)
    return export_hf(run, out, push_to_hub=push_to_hub, progress=progress)
