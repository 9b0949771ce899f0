"""Series storage and serving: prints figures, asserts nothing.

1. Stored size of a real run's series (preset riverbed-t1-8k), per codec, against JSON text.
2. Time to serve a 1000-point downsampled series from a 100,000-sample series, over the
   real app (TestClient: routing, database read, decode, MinMaxLTTB, orjson), on SQLite and,
   when it answers, on Postgres (``TCPFR_TEST_PG_URL``, default the local server), with the
   steps timed apart.

    .venv/bin/python bench/series_bench.py
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from store import codec  # noqa: E402

N_SAMPLES = 100_000
MAX_POINTS = 1000
REQUESTS = 200


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def fmt(samples: list[float]) -> str:
    ms = sorted(s * 1e3 for s in samples)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    return f"median {statistics.median(ms):6.2f} ms  p95 {p95:6.2f} ms  ({1e3 / statistics.mean(ms):6.0f} req/s)"


def stored_sizes() -> None:
    from engine import simulate
    from engine.presets import load_preset

    result = simulate(load_preset("riverbed-t1-8k"))
    samples = sum(len(s.t) for s in result.series.values())
    sizes = {
        label: sum(
            len(codec.encode(s.t, method=m)) + len(codec.encode(s.v, method=m))
            for s in result.series.values()
        )
        for label, m in (
            ("stored (default)", None),
            ("all raw float64", codec.RAW),
            ("all shuffled deflate", codec.SHUFFLED_DEFLATE),
        )
    }
    as_json = sum(len(json.dumps({"t": s.t, "v": s.v})) for s in result.series.values())
    print(f"run riverbed-t1-8k: {len(result.series)} series, {samples:,} samples")
    sizes["as JSON text"] = as_json
    for label, size in sizes.items():
        print(f"  {label:22} {size:>10,} B  {size / samples:5.2f} B/sample")


def synthetic() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4)
    t = np.arange(N_SAMPLES) * 0.1
    v = np.repeat(rng.integers(1, 45, N_SAMPLES // 100) * 1460.0, 100)  # a cwnd-like step series
    v = v + rng.normal(0, 50, N_SAMPLES)  # and sampling noise, so the codec has work to do
    return t, v


def serve(label: str, env: dict[str, str]) -> None:
    os.environ.update(env, TCPFR_LOG_LEVEL="WARNING")
    from fastapi.testclient import TestClient

    from api.main import create_app
    from api.serve import migrate
    from settings import Settings, get_settings

    get_settings.cache_clear()
    settings = Settings(reconcile_interval=0)
    migrate()
    run_id = stored_run(settings)
    url = f"/v1/runs/{run_id}/series/flow.f.cwnd?max_points={MAX_POINTS}"
    with TestClient(create_app(settings)) as client:
        body = client.get(url).json()
        assert body["points"] == MAX_POINTS, body.get("points")
        client.get(url)
        print(
            f"{label}: GET a {MAX_POINTS}-point series from {N_SAMPLES:,} samples, {REQUESTS} requests"
        )
        print(f"  JSON:                      {fmt(timed(lambda: client.get(url), REQUESTS))}")
        print(
            f"  CSV:                       {fmt(timed(lambda: client.get(url + '&format=csv'), REQUESTS))}"
        )
        etag = client.get(url).headers["etag"]
        print(
            f"  304 on If-None-Match:      {fmt(timed(lambda: client.get(url, headers={'If-None-Match': etag}), REQUESTS))}"
        )


def stored_run(settings: Any) -> uuid.UUID:
    """A succeeded run holding the synthetic series, stored where `settings` say."""
    from run_row import add_succeeded_run  # beside this file

    from store.db import make_engine, make_sessionmaker, session_scope
    from store.models import RunSeries

    t, v = synthetic()
    run_id = uuid.uuid4()
    sessions = make_sessionmaker(make_engine(settings))
    with session_scope(sessions) as s:
        add_succeeded_run(s, run_id, sim_time=1e4)
        s.add(
            RunSeries(
                run_id=run_id,
                key="flow.f.cwnd",
                unit="bytes",
                length=N_SAMPLES,
                t_start=0.0,
                t_end=float(t[-1]),
                codec=codec.CODEC,
                t=codec.encode(t),
                v=codec.encode(v),
            )
        )
    return run_id


def steps() -> None:
    from fastapi.encoders import jsonable_encoder
    from tsdownsample import MinMaxLTTBDownsampler

    t, v = synthetic()
    bt, bv = codec.encode(t), codec.encode(v)
    sizes = f"t {len(bt):,} B ({'shuffled deflate' if bt[0] else 'raw'}), v {len(bv):,} B ({'shuffled deflate' if bv[0] else 'raw'})"
    idx = MinMaxLTTBDownsampler().downsample(t, v, n_out=MAX_POINTS)
    body = {"t": t[idx], "v": v[idx]}
    plain = {"t": t[idx].tolist(), "v": v[idx].tolist()}
    n = 200
    print(f"steps, {N_SAMPLES:,} samples -> {MAX_POINTS} points:")
    print(f"  stored as: {sizes}")
    print(
        f"  decode t and v:            {fmt(timed(lambda: (codec.decode(bt), codec.decode(bv)), n))}"
    )
    print(
        f"  MinMaxLTTB:                {fmt(timed(lambda: MinMaxLTTBDownsampler().downsample(t, v, n_out=MAX_POINTS), n))}"
    )
    print(
        f"  orjson (numpy arrays):     {fmt(timed(lambda: orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), n))}"
    )
    print(
        f"  jsonable_encoder + json:   {fmt(timed(lambda: json.dumps(jsonable_encoder(plain)), n))}"
    )


def main() -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)
    stored_sizes()
    steps()
    with tempfile.TemporaryDirectory() as tmp:
        serve("SQLite", {"TCPFR_DATA_DIR": tmp})
    pg = os.environ.get("TCPFR_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    try:
        import psycopg

        admin = psycopg.connect(pg, autocommit=True, connect_timeout=2)
    except Exception as exc:
        print(f"Postgres: not reachable ({type(exc).__name__}); skipped")
        return
    name = f"tcpfr_bench_{secrets.token_hex(4)}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        with tempfile.TemporaryDirectory() as tmp:
            serve(
                "Postgres",
                {"TCPFR_DATA_DIR": tmp, "DATABASE_URL": pg.rsplit("/", 1)[0] + "/" + name},
            )
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()
