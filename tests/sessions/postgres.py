"""A private PostgreSQL cluster for the tests: a temp folder, a Unix socket, no TCP port.

``initdb`` refuses to run as root, so when the tests run as root the cluster belongs to the
``postgres`` user (Debian's package creates it) and its programs run through ``runuser``.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.installed import import_or_unavailable, postgresql_bindir, unavailable

DATABASE = "loopkit_test"


def _as_owner() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@contextmanager
def private_cluster() -> Iterator[str]:
    """Start a cluster, create a database, yield its SQLAlchemy URL; stop and delete it after
    (also when the tests fail)."""
    psycopg = import_or_unavailable("psycopg", install="loopkit[sql]")
    bindir = postgresql_bindir()
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        unavailable("the tests run as root and runuser (util-linux) is missing for initdb")
    root = Path(tempfile.mkdtemp(prefix="loopkit-pg-"))
    data, log = root / "data", root / "server.log"
    port = random.randint(20000, 60000)  # names the socket file only: no TCP listener
    started = False
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        _run(
            [
                *_as_owner(),
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            "initdb",
        )
        # fsync=off: the tests kill clients, never the server, so disk syncs only cost time.
        options = f"-k {root} -p {port} -c listen_addresses='' -c fsync=off"
        pg_ctl = [*_as_owner(), str(bindir / "pg_ctl"), "-D", str(data)]
        _run(
            [*pg_ctl, "-l", str(log), "-w", "-o", options, "start"],
            "pg_ctl start",
            log,
        )
        started = True
        with psycopg.connect(
            host=str(root), port=port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        yield f"postgresql+psycopg://postgres@/{DATABASE}?host={root}&port={port}"
    finally:
        if started:
            stop = [*_as_owner(), str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]
            subprocess.run(stop, capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def fresh_database(url: str) -> Iterator[str]:
    """A new, empty database in the cluster of ``url`` (a :func:`private_cluster` URL): its
    SQLAlchemy URL; dropped after. For a test that counts rows of whole tables, which the
    tests sharing the cluster's main database fill with their own."""
    from sqlalchemy.engine import make_url

    psycopg = import_or_unavailable("psycopg", install="loopkit[sql]")
    parsed = make_url(url)
    name = f"loopkit_test_{uuid.uuid4().hex[:12]}"
    connect = {
        "host": parsed.query["host"],
        "port": int(str(parsed.query["port"])),
        "user": parsed.username,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**connect) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield url.replace(f"/{parsed.database}?", f"/{name}?", 1)
    finally:
        with psycopg.connect(**connect) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _run(command: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        server_log = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        unavailable(
            f"{what} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]} {server_log}"
        )
