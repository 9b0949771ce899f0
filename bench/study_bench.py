"""A study through the service against the engine alone: the wall time of a preset study
(default the 135-run `kazmi-study`) submitted with `POST /v1/presets/{name}/sweep`
(`cache: refresh`, so every run is simulated) until its last run finishes, against
`python -m engine study NAME --jobs N` with the same N worker processes, in the embedded
default and on PostgreSQL + Redis. Prints figures and the ratios; asserts nothing.

    .venv/bin/python bench/study_bench.py [--study kazmi-study] [--workers 2]
                                          [--modes embedded,postgres]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_load import PY, ROOT, service  # noqa: E402

POLL = 0.25  # seconds between looks at the sweep: up to this much is added to its time


def engine_alone(study: str, jobs: int) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [PY, "-m", "engine", "study", study, "--jobs", str(jobs)],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def through_api(mode: str, study: str, workers: int) -> tuple[float, int, str]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        service(mode, Path(tmp), workers=workers) as (
            base,
            _env,
        ),
        httpx.Client(base_url=base, timeout=120) as client,
    ):
        time.sleep(2)  # let the worker processes finish starting
        t0 = time.perf_counter()
        r = client.post(f"/v1/presets/{study}/sweep", json={"cache": "refresh"})
        r.raise_for_status()
        sweep_id = r.json()["id"]
        while True:
            sweep = client.get(f"/v1/sweeps/{sweep_id}").json()
            if sweep["status"] in ("succeeded", "failed", "cancelled", "partial"):
                break
            # As a person or a dashboard polls: each look costs the API and the database
            # CPU that the two worker processes would otherwise have (2 cores in all).
            time.sleep(POLL)
        elapsed = time.perf_counter() - t0
        return elapsed, sweep["run_count"], sweep["status"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", default="kazmi-study")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modes", default="embedded,postgres")
    args = parser.parse_args()
    alone = engine_alone(args.study, args.workers)
    print(f"python -m engine study {args.study} --jobs {args.workers}: {alone:.1f} s")
    for mode in args.modes.split(","):
        elapsed, runs, status = through_api(mode.strip(), args.study, args.workers)
        print(
            f"{mode:9} API, {args.workers} worker processes: {runs} runs {status} in "
            f"{elapsed:.1f} s = {elapsed / alone:.2f}x the engine alone "
            f"({elapsed / runs * 1e3:.0f} ms per run)"
        )


if __name__ == "__main__":
    main()
