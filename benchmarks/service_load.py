"""Load benchmark of ``backalley serve`` (not a test): uploads in small batches while pages are read.

    python benchmarks/service_load.py [--games 10000] [--batch 50] [--uploaders 4] [--readers 4]
                                      [--read-interval 0.1]

Simulates ``--games`` games once (5% with an injected fault), adds 1% records
that conflict with a stored game (same ``game_id``, other content) and 1% lines
that are not JSON, and starts ``backalley serve`` on a fresh database on a free
port of 127.0.0.1. ``--uploaders`` clients then POST the records to
``/api/v1/games`` in batches of ``--batch`` (application/x-ndjson, one
keep-alive connection each) while ``--readers`` clients read pages of games
already uploaded (a game, a deal, the game as JSON, the games index's first page, a
filtered page of ``/api/v1/games``, a ``GROUP BY`` through ``/api/v1/sql``; every 25th read
the ``/players`` report page). Each reader starts a read every ``--read-interval``
seconds (a fixed read load: 4 readers at 0.1 s ask for up to 40 pages a second;
a read that takes longer delays the next); ``--read-interval 0`` reads again as
soon as the last read is answered, which measures how the two CPUs are shared
when readers take all they can get rather than uploads under a given read load.
Afterwards the service is stopped and the database checked: every game stored
once, games + rejects = records sent.

Reports records/s accepted through the API and read latency (p50, p95) per
page kind, on the terminal and in ``benchmarks/service_load.json``, with the CPU
time the service took while the uploads ran (its own process, and its worker
processes), in all and per record sent: on a shared machine, whose load moves
the records/s by a tenth or more from run to run, the CPU a record costs is the
steadier figure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import queue
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BACKALLEY = [str(BIN / "backalley")] if (BIN / "backalley").exists() else [sys.executable, "-m", "backalley"]
TOKEN = "load-benchmark-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parsed(line: bytes) -> dict[str, Any] | None:
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("game_id"), str) else None


def make_records(games: int, work: Path) -> list[bytes]:
    """The lines to send: the games, then conflicting copies of some, then lines that are not JSON."""
    src = work / f"games-{games}.jsonl"
    if not src.exists():
        subprocess.run(
            [*BACKALLEY, "simulate", "--games", str(games), "--seed", "14", "--faults", "0.05", "--out", str(src)],
            check=True,
        )
    lines = src.read_bytes().splitlines()
    records = [parsed(x) for x in lines]
    rng = random.Random(14)
    extra: list[bytes] = []
    for i in rng.sample([k for k, r in enumerate(records) if r is not None], max(1, games // 100)):
        rec = dict(records[i] or {})
        rec["event"] = "conflicting copy"
        extra.append(json.dumps(rec, separators=(",", ":")).encode())
    extra += [b"not json, line %d" % k for k in range(max(1, games // 100))]
    # Conflicts come after the whole first pass, so that they meet a stored game.
    return lines + extra


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


class Server:
    def __init__(self, db: Path, work: Path) -> None:
        tokens = work / "tokens"
        tokens.write_text(TOKEN + "\n")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [*BACKALLEY, "serve", "--db", str(db), "--port", str(self.port), "--tokens", str(tokens)],
            stderr=(work / "serve.log").open("wb"),
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/")
                conn.getresponse().read()
                conn.close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("backalley serve did not start") from None
                time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=120)

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of the service's process and of the processes under it (its workers)."""
        return {"service": _cpu(self.proc.pid), "workers": sum(_cpu(p) for p in _descendants(self.proc.pid))}


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command's name (``[]`` once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _cpu(pid: int) -> float:
    f = _stat(pid)
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK") if f else 0.0


def _descendants(pid: int) -> list[int]:
    parent = {int(p): int(f[1]) for p in os.listdir("/proc") if p.isdigit() and (f := _stat(int(p)))}
    out, todo = [], [pid]
    while todo:
        of = todo.pop()
        kids = [c for c, pp in parent.items() if pp == of]
        out += kids
        todo += kids
    return out


def uploader(
    port: int,
    batches: queue.Queue[list[bytes]],
    done: list[tuple[int, dict[str, int]]],
    stored: list[tuple[str, int]],
    errors: list[str],
) -> None:
    headers = {"Content-Type": "application/x-ndjson", "Authorization": f"Bearer {TOKEN}"}
    while True:
        try:
            batch = batches.get_nowait()
        except queue.Empty:
            break
        for attempt in range(3):  # an upload may be sent again: the same records are duplicates
            try:
                status, body = post(port, b"\n".join(batch), headers)
                break
            except OSError as exc:
                errors.append(f"upload attempt {attempt + 1}: {exc}")
        else:
            continue
        if status != 200:
            errors.append(f"upload {status}: {body[:200]!r}")
            continue
        answer = json.loads(body)
        done.append((len(batch), answer["fates"]))
        for r in answer["results"]:  # the games readers may ask for: stored, with their deal count
            if r["fate"] == "stored" and r["report"]["deals"]:
                stored.append((r["report"]["game_id"], len(r["report"]["deals"])))


_local = threading.local()


def post(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST on this thread's keep-alive connection (a new one after an error)."""
    conn = getattr(_local, "conn", None) or http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    _local.conn = conn
    try:
        conn.request("POST", "/api/v1/games", body=body, headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    except OSError:
        conn.close()
        _local.conn = None
        raise


def reader(
    port: int,
    stored: list[tuple[str, int]],
    stop: threading.Event,
    lat: dict[str, list[float]],
    errors: list[str],
    seed: int,
    interval: float,
) -> None:
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    n = 0
    due = time.perf_counter() + rng.uniform(0, interval)  # the readers' starts spread over one interval
    while not stop.is_set():
        if not stored:
            time.sleep(0.05)
            continue
        wait = due - time.perf_counter()
        if wait > 0:
            stop.wait(wait)
            continue
        due = max(due + interval, time.perf_counter())
        gid, deals = rng.choice(stored)
        n += 1
        kind, path = rng.choice(
            [
                ("game page", f"/games/{gid}"),
                ("deal page", f"/games/{gid}/deals/{rng.randint(1, deals)}"),
                ("game JSON", f"/api/v1/games/{gid}"),
                ("games index", "/games"),
                ("games index, filtered (API)", "/api/v1/games?status=invalid&limit=50"),
                ("sql", "/api/v1/sql?q=" + quote("SELECT status, count(*) AS n FROM games GROUP BY status")),
            ]
        )
        if n % 25 == 0:
            kind, path = "players page", "/players"
        t0 = time.perf_counter()
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        lat.setdefault(kind, []).append(time.perf_counter() - t0)
        if r.status != 200:
            errors.append(f"GET {path}: {r.status}")
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=10_000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--uploaders", type=int, default=4)
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--read-interval", type=float, default=0.1, help="seconds from one read of a reader to its next")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "backalley-service-load")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "service_load.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    lines = make_records(args.games, args.work)
    db = args.work / "service.duckdb"
    for p in (db, db.with_name(db.name + ".wal")):
        p.unlink(missing_ok=True)
    batches: queue.Queue[list[bytes]] = queue.Queue()
    for i in range(0, len(lines), args.batch):
        batches.put(lines[i : i + args.batch])
    server = Server(db, args.work)
    stop = threading.Event()
    try:  # the server is stopped whatever happens here: it must not outlive the benchmark
        done: list[tuple[int, dict[str, int]]] = []
        errors: list[str] = []
        lat: dict[str, list[float]] = {}
        stored: list[tuple[str, int]] = []  # the games stored so far (readers wait for the first)
        readers = [
            threading.Thread(target=reader, args=(server.port, stored, stop, lat, errors, k, args.read_interval))
            for k in range(args.readers)
        ]
        uploaders = [
            threading.Thread(target=uploader, args=(server.port, batches, done, stored, errors))
            for _ in range(args.uploaders)
        ]
        load_before = os.getloadavg()  # the machine is shared: its load goes next to the figures
        cpu_before = server.cpu()
        client_before = time.process_time()
        t0 = time.perf_counter()
        for t in uploaders:
            t.start()

        for t in readers:
            t.start()
        for t in uploaders:
            t.join()
        seconds = time.perf_counter() - t0
        cpu = {k: v - cpu_before[k] for k, v in server.cpu().items()}
        client_cpu = time.process_time() - client_before
        load_after = os.getloadavg()
        stop.set()
        for t in readers:
            t.join()
    finally:
        stop.set()
        server.stop()
    con = duckdb.connect(str(db), read_only=True)
    games, distinct = con.execute("SELECT count(*), count(DISTINCT game_id) FROM games").fetchall()[0]
    rejects = con.execute("SELECT count(*) FROM rejects").fetchall()[0][0]
    con.close()
    fates: dict[str, int] = {}
    for _, f in done:
        for k, v in f.items():
            fates[k] = fates.get(k, 0) + v
    sent = len(lines)
    result: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "records_sent": sent,
        "games_simulated": args.games,
        "batch": args.batch,
        "uploaders": args.uploaders,
        "readers": args.readers,
        "read_interval_s": args.read_interval,
        "load_average_1_5_15_min": {
            "start": [round(x, 2) for x in load_before],
            "end": [round(x, 2) for x in load_after],
        },
        "seconds": round(seconds, 2),
        "records_per_s": round(sent / seconds, 1),
        "service_cpu_s": {k: round(v, 2) for k, v in cpu.items()},
        "service_cpu_ms_per_record": {k: round(1000 * v / sent, 2) for k, v in cpu.items()},
        # The clients run on the same CPUs: what they take, the service cannot have.
        "client_cpu_s": round(client_cpu, 2),
        "fates": fates,
        "games_stored": games,
        "rejects": rejects,
        "consistent": games + rejects == sent and distinct == games and not [e for e in errors if "attempt" not in e],
        "reads": {
            kind: {
                "n": len(v),
                "p50_ms": round(1000 * statistics.median(v), 1),
                "p95_ms": round(1000 * percentile(v, 95), 1),
            }
            for kind, v in sorted(lat.items())
        },
        "errors": errors[:10],
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if not result["consistent"]:
        print(f"inconsistent; the service's log: {args.work / 'serve.log'}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
