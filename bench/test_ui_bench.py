"""UI automation speed on the invoice app under Xvfb (issue 4's benchmarks).

1. Click latency through the MCP server over stdio, from the call to the answer with the effect
   confirmed: synthesized input (the fast route, confirmed by accessibility events) beside Qt's
   accessible "Press" action, each without and with the tree diff. Reference: the UI test system
   the spec describes reports about 200 ms a click and about 3,000 ms with the diff.
2. One read over stdio beside streamable HTTP with the bearer token and the Host/Origin checks.
3. A tree snapshot of the invoice app holding about 500 accessible nodes: the bulk read
   (Collection.GetMatches + one pipelined burst) on jeepney's wire format beside the hand-written
   wire format it replaced (loaded from git history, ``handwritten_dbus.py``), and beside reading
   node by node, with our D-Bus client and with libatspi (PyGObject), the usual way.
4. On that 500-node tree, over MCP from the ``mcp`` SDK's client: ``ui_tree`` and click + diff,
   this server (the event-driven tree mirror) beside the server before it (the same commit as
   the hand-written wire format, run from ``git archive``; it read the whole tree for each);
   and ``ui_missing_ids`` beside ``ui_tree``.

Prints figures and ratios; asserts only that the work was really done. Run:
``.venv/bin/python -m pytest bench/test_ui_bench.py -s -q`` (or ``nox -s bench``).
"""

from __future__ import annotations

import json
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import handwritten_dbus
import pytest

from loopkit_ui.backends.atspi import AtspiBackend
from loopkit_ui.backends.atspi_constants import ACCESSIBLE, PROPERTIES
from loopkit_ui.headless_desktop import HeadlessDesktop
from loopkit_ui.testing import UIServerClient, desktop_available

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
ROUNDS = 15
SNAPSHOTS = 15
READS = 60
ITEMS_FOR_500_NODES = 95  # 5 nodes a row (header + 4 cells) + the rest of the window
REFERENCE_CLICK_MS = 200.0
REFERENCE_DIFF_MS = 3000.0

pytestmark = pytest.mark.skipif(desktop_available() is not None, reason=str(desktop_available()))


@pytest.fixture(scope="module")
def desktop() -> Iterator[HeadlessDesktop]:
    with HeadlessDesktop() as d:
        yield d


@pytest.fixture(scope="module")
def app(desktop: HeadlessDesktop, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    log = tmp_path_factory.mktemp("log") / "invoice.log"
    env = {"INVOICE_APP_LOG": str(log), "PYTHONPATH": str(EXAMPLES)}
    proc = desktop.spawn([sys.executable, "-m", "invoice_app"], env=env, cwd=str(EXAMPLES),
                         stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def ui(
    desktop: HeadlessDesktop, app: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[UIServerClient]:
    out = tmp_path_factory.mktemp("ui")
    args = ["-m", "loopkit_ui.server", "--app-name", "invoice_app", "--output-dir", str(out),
            "--attach-timeout", "20"]  # fmt: skip
    with UIServerClient(args, env=desktop.child_env()) as client:
        assert not client.call("ui_get_element", target="AddItemButton").error
        yield client


def _stats(values: list[float]) -> str:
    return (f"median {statistics.median(values):7.1f} ms   min {min(values):6.1f}   "
            f"max {max(values):7.1f}")  # fmt: skip


def test_click_latency(ui: UIServerClient) -> None:
    variants = [("input", False), ("input", True), ("action", False), ("action", True)]
    client_ms: dict[tuple[str, bool], list[float]] = {v: [] for v in variants}
    server_ms: dict[tuple[str, bool], list[float]] = {v: [] for v in variants}
    for _ in range(2):  # warm-up: first lookups, first events
        ui.call("ui_click", target="AddItemButton")
        ui.call("ui_click", target="DeleteSelectedButton")
    for _ in range(ROUNDS):
        for method, diff in variants:
            # Add a row (it is selected), then delete it: two clicks with a visible effect,
            # and the table keeps its size from round to round.
            for target in ("AddItemButton", "DeleteSelectedButton"):
                answer = ui.call("ui_click", target=target, method=method, diff=diff)
                assert not answer.error and answer["success"], answer
                assert "accessibility events" in answer["effect"], answer
                assert ("diff" in answer.data) is diff
                client_ms[(method, diff)].append(answer.ms)
                server_ms[(method, diff)].append(answer["ms"])
    assert ui.call("ui_get_cell", table="ItemsTable", row=2, column=0).error  # back to 2 rows
    fast = statistics.median(client_ms[("input", False)])
    fast_diff = statistics.median(client_ms[("input", True)])
    press = statistics.median(client_ms[("action", False)])
    print(f"\n\nClick latency, invoice app, MCP over stdio, call -> answer with the effect "
          f"confirmed ({2 * ROUNDS} clicks each)")  # fmt: skip
    names = {("input", False): "synthesized input (default)", ("input", True): "synthesized input + diff",
             ("action", False): "accessible Press action", ("action", True): "Press action + diff"}  # fmt: skip
    for variant in variants:
        server = statistics.median(server_ms[variant])
        print(f"  {names[variant]:<30} {_stats(client_ms[variant])}   (server-side {server:.1f})")
    print(f"  fast route vs Press:        {press / fast:5.1f}x faster")
    print(f"  vs reference ~{REFERENCE_CLICK_MS:.0f} ms click: {REFERENCE_CLICK_MS / fast:5.1f}x faster;"
          f" vs ~{REFERENCE_DIFF_MS:.0f} ms with diff: {REFERENCE_DIFF_MS / fast_diff:5.1f}x faster")  # fmt: skip
    print("  targets: <= 50 ms, <= 150 ms with diff")


def test_read_latency_stdio_and_http(
    ui: UIServerClient, desktop: HeadlessDesktop, tmp_path: Path
) -> None:
    """One read (ui_get_text) over stdio beside streamable HTTP with the bearer token, Host
    and Origin checks every HTTP request now goes through. Every answer is checked."""
    import asyncio

    from loopkit.mcp import MCPClient

    expected = ui.call("ui_get_text", target="TotalLabel").text
    assert expected.startswith("Total: "), expected
    stdio_ms = []
    for _ in range(READS):
        answer = ui.call("ui_get_text", target="TotalLabel")
        assert not answer.error and answer.text == expected, answer
        stdio_ms.append(answer.ms)

    token = secrets.token_urlsafe(32)
    token_file = tmp_path / "token"
    token_file.write_text(token)
    token_file.chmod(0o600)
    server = subprocess.Popen(
        [sys.executable, "-m", "loopkit_ui.server", "--http", "127.0.0.1:0", "--token-file",
         str(token_file), "--app-name", "invoice_app", "--output-dir", str(tmp_path / "ui")],
        env=desktop.child_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split()[-1]

        async def reads() -> list[float]:
            times = []
            headers = {"Authorization": f"Bearer {token}"}
            async with MCPClient.http(url, headers=headers) as client:
                read = {t.name: t for t in await client.list_tools()}["ui_get_text"]
                for number in range(READS + 5):
                    start = time.perf_counter()
                    text = await read.invoke({"target": "TotalLabel"})
                    if number >= 5:  # after a warm-up
                        times.append((time.perf_counter() - start) * 1000)
                    assert text == expected, text
            return times

        http_ms = asyncio.run(reads())
    finally:
        server.terminate()
        server.wait(10)
    stdio, http = statistics.median(stdio_ms), statistics.median(http_ms)
    print(f"\n\nRead latency, ui_get_text, call -> answer ({READS} reads each, all checked)")
    print(f"  MCP over stdio                               {_stats(stdio_ms)}")
    print(f"  streamable HTTP, token + Host/Origin checks {_stats(http_ms)}  "
          f"({http / stdio:.2f}x stdio)")  # fmt: skip


@pytest.fixture(scope="module")
def big_invoice(ui: UIServerClient, tmp_path_factory: pytest.TempPathFactory) -> int:
    """Open an invoice of ITEMS_FOR_500_NODES items; the app then has about 500 nodes."""
    invoice = tmp_path_factory.mktemp("invoice") / "big.json"
    items = [{"description": f"item {i}", "quantity": i % 7 + 1, "unit_price": 1.5 * i}
             for i in range(ITEMS_FOR_500_NODES)]  # fmt: skip
    invoice.write_text(json.dumps({"discount_percent": 0, "items": items}), encoding="utf-8")
    assert not ui.call("ui_type_text", target="FilePathInput", text=str(invoice)).error
    assert ui.call("ui_click", target="OpenButton")["success"]
    cell = ui.call("ui_get_text", target="ItemsTable", row=ITEMS_FOR_500_NODES - 1, column=0)
    assert cell.text == f"item {ITEMS_FOR_500_NODES - 1}", cell
    answer = ui.call("ui_tree")
    assert not answer.error and not answer["truncated"] and answer["nodes"] >= 480, answer
    return int(answer["nodes"])


@pytest.fixture(scope="module")
def before_ui(
    desktop: HeadlessDesktop, app: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[UIServerClient | None]:
    """The server as it was before the tree mirror and jeepney (``git archive`` of
    HANDWRITTEN_COMMIT), on the same app; None outside a git checkout."""
    folder = tmp_path_factory.mktemp("before")
    try:
        archive = subprocess.run(["git", "archive", handwritten_dbus.HANDWRITTEN_COMMIT, "src"],
                                 cwd=REPO, capture_output=True, check=True, timeout=60).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        yield None
        return
    env = {**desktop.child_env(), "PYTHONPATH": str(folder / "src")}
    args = ["-m", "loopkit_ui.server", "--app-name", "invoice_app", "--output-dir",
            str(folder / "out"), "--attach-timeout", "20"]  # fmt: skip
    with UIServerClient(args, env=env) as client:
        yield client


def test_tree_snapshot_500_nodes(
    ui: UIServerClient, before_ui: UIServerClient | None, big_invoice: int,
    desktop: HeadlessDesktop,
) -> None:  # fmt: skip
    nodes = big_invoice
    servers = {"this server (mirror)": ui}
    if before_ui is not None:
        servers[f"before ({handwritten_dbus.HANDWRITTEN_COMMIT}, full read)"] = before_ui
    mcp_ms: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(SNAPSHOTS):
        for name, server in servers.items():
            answer = server.call("ui_tree")
            assert not answer.error and not answer["truncated"], answer
            assert answer["nodes"] == nodes, (name, answer)
            mcp_ms[name].append(answer.ms)

    backend = AtspiBackend(app_name="invoice_app", bus_address=desktop.a11y_bus_address)
    old = handwritten_dbus.load()
    old_client = None
    try:
        backend.attach()
        reader = backend.reader
        start = time.perf_counter()
        first = reader.read()[0]  # jeepney serialises every call once: the cold read
        cold_ms = (time.perf_counter() - start) * 1000
        assert len(first) == nodes
        readers: dict[str, object] = {"jeepney wire format": reader}
        if old is not None:
            old_client = old.DBusClient(desktop.a11y_bus_address)
            app_ref = old.AppRef(reader.app.bus, reader.app.root, reader.app.name, reader.app.pid)
            readers["hand-written wire format"] = old.TreeReader(old_client, app_ref)
        bulk_ms: dict[str, list[float]] = {name: [] for name in readers}
        for _ in range(SNAPSHOTS):
            for name, tree_reader in readers.items():
                start = time.perf_counter()
                raw, truncated = tree_reader.read()  # type: ignore[attr-defined]
                bulk_ms[name].append((time.perf_counter() - start) * 1000)
                assert len(raw) == nodes and not truncated
        by_node_ms = [_node_by_node(backend) for _ in range(3)]
    finally:
        backend.close()
        if old_client is not None:
            old_client.close()
    libatspi_ms = _libatspi_walk(desktop)

    print(f"\n\nTree snapshot, invoice app with {ITEMS_FOR_500_NODES} items: {nodes} nodes")
    for name, values in mcp_ms.items():
        print(f"  ui_tree over MCP, {name:<28} {_stats(values)}")
    if len(mcp_ms) == 2:
        new, before = (statistics.median(v) for v in mcp_ms.values())
        print(f"  ui_tree: this server / before = {new / before:.2f}")
    for name, values in bulk_ms.items():
        median = statistics.median(values)
        print(f"  bulk read in process, {name:<26} {_stats(values)}   "
              f"({median / nodes * 1000:.0f} us/node)")  # fmt: skip
    print(f"  bulk read, jeepney, first (cold) read    {cold_ms:7.1f} ms")
    if len(bulk_ms) == 2:
        library, by_hand = (statistics.median(v) for v in bulk_ms.values())
        print(f"  bulk read: jeepney / hand-written = {library / by_hand:.2f}")
    bulk = statistics.median(bulk_ms["jeepney wire format"])
    slow = statistics.median(by_node_ms)
    print(f"  node by node, same D-Bus client  {_stats(by_node_ms)}   ({slow / nodes:.2f} ms/node, "
          f"{slow / bulk:.1f}x the bulk read)")  # fmt: skip
    if libatspi_ms is not None:
        print(
            f"  node by node, libatspi (gi)      median {libatspi_ms:7.1f} ms   "
            f"({libatspi_ms / nodes:.2f} ms/node, {libatspi_ms / bulk:.1f}x the bulk read)"
        )
    print("  target: ui_tree over MCP <= 60 ms for ~500 nodes")


def test_missing_ids_500_nodes(ui: UIServerClient, big_invoice: int) -> None:
    """ui_missing_ids beside ui_tree on the 500-node tree: both read the mirror; ui_missing_ids
    also walks it for the controls without an id (the Notes panel's five, not the cells)."""
    ms: dict[str, list[float]] = {"ui_tree": [], "ui_missing_ids": []}
    for _ in range(SNAPSHOTS):
        for name, values in ms.items():
            answer = ui.call(name)
            assert not answer.error, answer
            values.append(answer.ms)
    found = ui.call("ui_missing_ids").structured
    assert found["count"] == 5 and found["checked"] == big_invoice, found
    print(f"\n\nControls without an id, {big_invoice} nodes, over MCP ({SNAPSHOTS} calls each)")
    for name, values in ms.items():
        print(f"  {name:<15} {_stats(values)}")
    tree, missing = (statistics.median(v) for v in ms.values())
    print(f"  ui_missing_ids / ui_tree = {missing / tree:.2f}")


def test_click_diff_500_nodes(
    ui: UIServerClient, before_ui: UIServerClient | None, big_invoice: int
) -> None:
    """Add a row, then delete it, with the diff, on the 500-node tree: each answer's diff must
    name the row's five nodes (row header and four cells) appearing, then disappearing."""
    servers = {"this server (mirror)": ui}
    if before_ui is not None:
        servers[f"before ({handwritten_dbus.HANDWRITTEN_COMMIT}, full reads)"] = before_ui
    variants = [(name, diff) for name in servers for diff in (False, True)]
    client_ms: dict[tuple[str, bool], list[float]] = {v: [] for v in variants}
    diffs: dict[str, list[tuple[int, int]]] = {name: [] for name in servers}
    for server in servers.values():  # warm-up
        server.call("ui_click", target="AddItemButton")
        server.call("ui_click", target="DeleteSelectedButton")
    for _ in range(ROUNDS // 2):
        for name, diff in variants:
            server = servers[name]
            add = server.call("ui_click", target="AddItemButton", diff=diff)
            delete = server.call("ui_click", target="DeleteSelectedButton", diff=diff)
            for answer in (add, delete):
                assert not answer.error and answer["success"], answer
                client_ms[(name, diff)].append(answer.ms)
            if diff:
                appeared, gone = add["diff"]["appeared"], delete["diff"]["disappeared"]
                assert "table cell 'New item'" in appeared, add["diff"]
                assert "table cell 'New item'" in gone, delete["diff"]
                diffs[name].append((len(appeared), len(gone)))
    print(f"\n\nClick + diff, invoice app with {ITEMS_FOR_500_NODES} items ({big_invoice} nodes), "
          f"MCP over stdio, add a row then delete it ({ROUNDS // 2 * 2} clicks each)")  # fmt: skip
    for name, diff in variants:
        label = f"{name}{' + diff' if diff else ''}"
        print(f"  {label:<44} {_stats(client_ms[(name, diff)])}")
    for name, counts in diffs.items():
        print(f"  {name}: (appeared, disappeared) per add/delete pair: {sorted(set(counts))}")
    if before_ui is not None:
        names = list(servers)
        new, before = (statistics.median(client_ms[(n, True)]) for n in names)
        print(f"  click + diff: this server / before = {new / before:.2f}")
    print("  target: click + diff <= 150 ms on 500 nodes")


def _node_by_node(backend: AtspiBackend) -> float:
    """The classic walk: one round trip per property per node (role, state, id, name, children)."""
    backend.attach()
    reader = backend.reader
    start = time.perf_counter()
    stack, count = [reader.app.root], 0
    while stack:
        path = stack.pop()
        reader.call(path, ACCESSIBLE, "GetRole")
        reader.call(path, ACCESSIBLE, "GetState")
        reader.call(path, ACCESSIBLE, "GetAccessibleId")
        reader.call(path, PROPERTIES, "Get", "ss", (ACCESSIBLE, "Name"))
        stack.extend(p for _, p in reader.call(path, ACCESSIBLE, "GetChildren")[0])
        count += 1
    return (time.perf_counter() - start) * 1000


_LIBATSPI_WALK = """
import sys, time
import gi
gi.require_version("Atspi", "2.0")
from gi.repository import Atspi
desktop = Atspi.get_desktop(0)
app = next(desktop.get_child_at_index(i) for i in range(desktop.get_child_count())
           if desktop.get_child_at_index(i).get_name() == "Invoice Editor")
def walk(node):
    node.get_role(); node.get_state_set(); node.get_accessible_id(); node.get_name()
    return 1 + sum(walk(node.get_child_at_index(i)) for i in range(node.get_child_count()))
times = []
for _ in range(3):
    start = time.perf_counter()
    count = walk(app)
    times.append((time.perf_counter() - start) * 1000)
print(count, sorted(times)[1])
"""


def _libatspi_walk(desktop: HeadlessDesktop) -> float | None:
    """libatspi's walk in a child process (it binds to one bus per process)."""
    try:
        out = subprocess.run([sys.executable, "-c", _LIBATSPI_WALK], env=desktop.child_env(),
                             capture_output=True, text=True, timeout=120, check=True).stdout  # fmt: skip
    except (subprocess.SubprocessError, OSError):
        return None
    _count, ms = out.split()
    return float(ms)
