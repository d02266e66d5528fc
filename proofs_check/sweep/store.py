"""The sweep's results: one flat row per (claim, point, seed), in Parquet files under ``DIR/results/``.

Row schema (one column each; absent values are null):

* ``row_key`` (sha1 of claim + stack + spec fingerprint + code hash, see ``grid.row_key``), ``sweep``,
  ``spec_hash`` (the spec's fingerprint), ``source`` (the code's hash), ``claim``, ``point`` (the grid
  point's axis values as JSON), ``seed``;
* the stack: ``arch``, ``kernel``, ``T``, ``P``, ``d``, ``layers``, ``heads``, ``dtype``, ``device``,
  ``checkpoint`` (every scalar field of ``numerics.stacks.params.StackSpecModel``), every knob at its effective value (``value_scale``, ``decay``, ...),
  ``arch_options`` (JSON);
* the verdict: ``verdict`` (holds | conditional | fails | n/a), ``error``, ``tolerance``,
  ``error_ratio`` (error / tolerance), ``condition``, ``reason``, ``counterexample`` (JSON), and each
  entry of the verdict's ``measured`` and ``predicted`` dicts as ``measured_<name>`` /
  ``predicted_<name>`` (numbers as float64, flags as bool, text as string, anything else as JSON);
* ``seconds``, ``worker`` (the Dask worker's address), ``version`` (the package version on the worker).

Each completed batch is one file ``batch-<UTC time>-<id>.parquet``, written through the project's
atomic writer (``numerics.storage.io.atomic_path``: temporary file, fsync, rename), so a reader never
sees half a batch.  pyarrow takes a folder's schema from its first file, so ``00-schema.parquet``
(no rows) carries the union of every batch's columns: ``pandas.read_parquet(DIR/results)`` reads the
folder as one table with all of them.  Rows are deduplicated by ``row_key`` on write and on read
(:meth:`Store.read` returns each key once, so counts are of unique rows).  A file in ``results/``
that is not such a batch is refused with its name (``InvalidInput``).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from numerics.stacks.params import StackSpecModel, knob_kinds

SCHEMA_FILE = "00-schema.parquet"
#: the Parquet type of a knob of each JSON Schema type (numerics.stacks.params.knob_kinds)
COLUMN_TYPES = {"integer": pa.int64(), "number": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}
#: the stack's columns: every scalar field of the declaration (numerics.stacks.params.StackSpecModel), typed by it
STACK_COLUMNS = tuple(knob_kinds(StackSpecModel))
FIXED = {"row_key": pa.string(), "sweep": pa.string(), "spec_hash": pa.string(), "source": pa.string(),
         "claim": pa.string(), "point": pa.string(),
         **{name: COLUMN_TYPES[kind] for name, kind in knob_kinds(StackSpecModel).items()},
         "arch_options": pa.string(),
         **{name: COLUMN_TYPES[kind] for name, kind in knob_kinds().items()},
         "verdict": pa.string(), "error": pa.float64(), "tolerance": pa.float64(), "error_ratio": pa.float64(),
         "condition": pa.string(), "reason": pa.string(), "counterexample": pa.string(),
         "seconds": pa.float64(), "worker": pa.string(), "version": pa.string()}


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _flat(value):
    """A measured/predicted value as a Parquet scalar: float, bool, str, or JSON text."""
    if getattr(value, "ndim", None) == 0:
        value = value.item()  # a 0-d tensor or array, a numpy scalar
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    return _json(value)


def make_row(task: dict, verdict, seconds: float, worker: str, version: str) -> dict:
    """The row of one task (``grid.Task.payload()``) and its ``Verdict``."""
    from proofs_check.sweep.grid import knob_defaults

    spec = task["spec"]
    row = {"row_key": task["key"], "sweep": task["sweep"], "spec_hash": task.get("spec_hash"),
           "source": task.get("source"), "claim": task["claim"], "point": _json(task["point"])}
    row.update({k: spec[k] for k in STACK_COLUMNS})
    row.update({**knob_defaults(), **spec["knobs"]})
    row["arch_options"] = _json(spec["arch_options"])
    ratio = None
    if verdict.error is not None and verdict.tolerance:
        ratio = verdict.error / verdict.tolerance
    row.update(verdict=verdict.status, error=_float(verdict.error), tolerance=_float(verdict.tolerance),
               error_ratio=_float(ratio), condition=verdict.condition, reason=verdict.reason,
               counterexample=None if verdict.counterexample is None else _json(verdict.counterexample),
               seconds=float(seconds), worker=worker, version=version)
    for prefix, values in (("measured_", verdict.measured), ("predicted_", verdict.predicted)):
        for name, value in (values or {}).items():
            row[f"{prefix}{name}"] = _flat(value)
    return row


def _float(value):
    return None if value is None else float(value)


def _column_type(values: list) -> pa.DataType:
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.null()
    if kinds == {bool}:
        return pa.bool_()
    if kinds <= {float, int}:
        return pa.float64()
    return pa.string()


def to_table(rows: list[dict], known: pa.Schema | None = None) -> pa.Table:
    """Rows as a table: fixed columns typed by ``FIXED``, the others by their values (a column whose
    values mix types becomes text); a column ``known`` from earlier batches keeps its type when possible."""
    names = list(FIXED) + sorted({k for r in rows for k in r} - set(FIXED))
    arrays, schema_fields = [], []
    for name in names:
        values = [r.get(name) for r in rows]
        if name in FIXED:
            typ = FIXED[name]
        else:
            typ = _column_type(values)
            old = known.field(name).type if known is not None and name in known.names else None
            if old is not None and typ != old:
                typ = old if typ == pa.null() else (typ if old == pa.null() else pa.string())
            if typ == pa.string():
                values = [v if v is None or isinstance(v, str) else _json(v) for v in values]
        arrays.append(pa.array(values, type=typ))
        schema_fields.append(pa.field(name, typ))
    return pa.Table.from_arrays(arrays, schema=pa.schema(schema_fields))


def unify(schemas: list[pa.Schema]) -> pa.Schema:
    """One schema for every batch: a column typed differently in two batches becomes text
    (pyarrow casts the numbers when reading)."""
    merged: dict[str, pa.DataType] = {}
    for schema in schemas:
        for f in schema:
            old = merged.get(f.name)
            if old is None or old == pa.null():
                merged[f.name] = f.type
            elif f.type != pa.null() and f.type != old:
                merged[f.name] = pa.string()
    return pa.schema([pa.field(n, t) for n, t in merged.items()])


def _atomic_parquet(table: pa.Table, path: Path) -> None:
    from numerics.storage.io import atomic_path

    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


class Store:
    """``DIR/results/``: append batches of rows, list the keys already stored, read it all."""

    def __init__(self, out: str | os.PathLike):
        self.out = Path(out)
        self.dir = self.out / "results"
        self._keys: set[str] | None = None
        self._schema: pa.Schema | None = None

    def batches(self) -> list[Path]:
        return sorted(self.dir.glob("batch-*.parquet")) if self.dir.is_dir() else []

    def _refuse(self, path: Path, why: str):
        from proofs_check.validation import InvalidInput

        return InvalidInput(f"--out {self.out}: {path} is not a batch of a fastslow sweep ({why})")

    def _read(self, path: Path, columns: list[str] | None) -> pa.Table:
        """Columns of one batch file; InvalidInput naming the file when it is not a batch of a sweep."""
        try:
            names = pq.read_schema(path).names
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise self._refuse(path, f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}") from None
        if "row_key" not in names:
            raise self._refuse(path, "no row_key column")
        return pq.read_table(path, columns=[c for c in columns if c in names] if columns is not None else None)

    def keys(self) -> set[str]:
        """The row keys already stored."""
        if self._keys is None:
            self._keys = set()
            for path in self.batches():
                self._keys.update(self._read(path, ["row_key"]).column("row_key").to_pylist())
        return self._keys

    def identities(self) -> set[tuple]:
        """The (spec_hash, source) pairs of the stored rows (None for rows written without them)."""
        found = set()
        for path in self.batches():
            table = self._read(path, ["spec_hash", "source"])
            values = [table.column(c).to_pylist() if c in table.column_names else [None] * table.num_rows
                      for c in ("spec_hash", "source")]
            found.update(zip(*values))
        return found

    def schema(self) -> pa.Schema | None:
        if self._schema is None and self.batches():
            for path in self.batches():
                self._read(path, ["row_key"])  # a foreign file is refused with its name
            self._schema = unify([pq.read_schema(path) for path in self.batches()])
        return self._schema

    def append(self, rows: list[dict]) -> Path | None:
        """Write the rows whose keys are new as one batch file; return its path (None if none was new)."""
        keys = self.keys()
        fresh, seen = [], set()
        for row in rows:
            if row["row_key"] not in keys and row["row_key"] not in seen:
                seen.add(row["row_key"])
                fresh.append(row)
        if not fresh:
            return None
        self.dir.mkdir(parents=True, exist_ok=True)
        table = to_table(fresh, self.schema())
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        path = self.dir / f"batch-{stamp}-{uuid.uuid4().hex[:8]}.parquet"
        _atomic_parquet(table, path)
        keys.update(seen)
        self._schema = unify([s for s in (self._schema, table.schema) if s is not None])
        _atomic_parquet(self._schema.empty_table(), self.dir / SCHEMA_FILE)
        return path

    def repair(self) -> None:
        """Rewrite ``00-schema.parquet`` when it is missing or lags the batches (a run stopped between
        writing a batch and the schema file)."""
        schema = self.schema()
        if schema is None:
            return
        path = self.dir / SCHEMA_FILE
        try:
            current = pq.read_schema(path)
        except (OSError, ValueError, pa.ArrowException):
            current = None
        if current is None or not current.equals(schema):
            _atomic_parquet(schema.empty_table(), path)

    def read(self):
        """Every stored row as one pandas DataFrame (empty when nothing is stored)."""
        import pandas as pd

        if not self.batches():
            return pd.DataFrame(columns=list(FIXED))
        batches = self.batches()
        for path in batches:
            self._read(path, ["row_key"])
        df = pq.read_table(list(map(str, batches)), schema=self.schema()).to_pandas()
        return df.drop_duplicates("row_key", keep="first").reset_index(drop=True)
