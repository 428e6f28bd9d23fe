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


class Cluster:
    """A running private cluster: its URL, and :meth:`stop`/:meth:`start` for outage tests
    (the same data folder and socket, so clients reconnect to the same database)."""

    def __init__(self, root: Path, port: int, bindir: Path) -> None:
        self.root, self.port, self.bindir = root, port, bindir
        self.data, self.log = root / "data", root / "server.log"
        self.url = f"postgresql+psycopg://postgres@/{DATABASE}?host={root}&port={port}"
        self.running = False

    def _pg_ctl(self) -> list[str]:
        return [*_as_owner(), str(self.bindir / "pg_ctl"), "-D", str(self.data)]

    def start(self) -> None:
        """Start the server (and wait until it takes connections)."""
        # fsync=off: the tests kill clients, never the server, so disk syncs only cost time.
        options = f"-k {self.root} -p {self.port} -c listen_addresses='' -c fsync=off"
        _run([*self._pg_ctl(), "-l", str(self.log), "-w", "-o", options, "start"],
             "pg_ctl start", self.log)  # fmt: skip
        self.running = True

    def stop(self) -> None:
        """Stop the server now (``-m fast``: open connections are cut, as in an outage)."""
        subprocess.run([*self._pg_ctl(), "-m", "fast", "stop"], capture_output=True, timeout=60)
        self.running = False


@contextmanager
def private_cluster() -> Iterator[str]:
    """Start a cluster, create a database, yield its SQLAlchemy URL; stop and delete it after
    (also when the tests fail)."""
    with private_cluster_control() as cluster:
        yield cluster.url


@contextmanager
def private_cluster_control() -> Iterator[Cluster]:
    """:func:`private_cluster` as a :class:`Cluster` that a test can stop and start again."""
    psycopg = import_or_unavailable("psycopg", install="loopkit[sql]")
    bindir = postgresql_bindir()
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        unavailable("the tests run as root and runuser (util-linux) is missing for initdb")
    root = Path(tempfile.mkdtemp(prefix="loopkit-pg-"))
    port = random.randint(20000, 60000)  # names the socket file only: no TCP listener
    cluster = Cluster(root, port, bindir)
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        _run(
            [
                *_as_owner(),
                str(bindir / "initdb"),
                "-D",
                str(cluster.data),
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
        cluster.start()
        with psycopg.connect(
            host=str(root), port=port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        yield cluster
    finally:
        if cluster.running:
            cluster.stop()
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
