"""What a dashboard's poll of a sweep costs: bytes and latency of GET /v1/sweeps/{id}, its
summary and its progress view, each polled as a browser does (If-None-Match with the last
ETag). Prints figures; asserts nothing.

    python bench/sweep_polls.py --url http://127.0.0.1:8000 --sweep ID [--polls 40]

Run it against a sweep that is still running (issue 31: a partial summary was rebuilt on
every poll); see the report of issue 31 for how the figures were taken.
"""

from __future__ import annotations

import argparse
import statistics
import time

import httpx


def poll(client: httpx.Client, path: str, polls: int) -> dict[str, float]:
    etag: str | None = None
    sizes, times, not_modified = [], [], 0
    for _ in range(polls):
        headers = {"If-None-Match": etag} if etag else {}
        start = time.perf_counter()
        resp = client.get(path, headers=headers)
        times.append(time.perf_counter() - start)
        sizes.append(len(resp.content))
        not_modified += resp.status_code == 304
        etag = resp.headers.get("etag", etag)
    times.sort()
    return {
        "bytes_first": sizes[0],
        "bytes_mean": statistics.fmean(sizes),
        "p50_ms": 1000 * times[len(times) // 2],
        "p90_ms": 1000 * times[int(len(times) * 0.9)],
        "not_modified": not_modified,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--sweep", required=True)
    ap.add_argument("--polls", type=int, default=40)
    args = ap.parse_args()
    with httpx.Client(base_url=args.url, timeout=60) as client:
        for suffix in ("", "/summary", "/summary?format=csv", "/progress"):
            path = f"/v1/sweeps/{args.sweep}{suffix}"
            if client.get(path).status_code == 404:
                print(f"{path:60s} (no such route)")
                continue
            f = poll(client, path, args.polls)
            print(
                f"{path:60s} first {f['bytes_first']:>8.0f} B  mean {f['bytes_mean']:>8.0f} B/poll"
                f"  p50 {f['p50_ms']:7.1f} ms  p90 {f['p90_ms']:7.1f} ms"
                f"  304s {f['not_modified']:.0f}/{args.polls}"
            )


if __name__ == "__main__":
    main()
