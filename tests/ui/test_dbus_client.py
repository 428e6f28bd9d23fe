"""The D-Bus client on jeepney's wire format, against the real buses of the headless desktop.

The peers are real: the desktop's dbus-daemon (session bus), the AT-SPI bus, and a second
connection opened with jeepney's blocking I/O (an independent code path) that emits signals,
calls us, or stays silent so our calls time out.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest
from jeepney import (
    DBusAddress,
    HeaderFields,
    Parser,
    new_method_call,
    new_method_return,
    new_signal,
)
from jeepney.io.blocking import DBusConnection, open_dbus_connection

from loopkit_ui.backends import atspi_constants as C
from loopkit_ui.backends.dbus_client import (
    DBusCallError,
    DBusClient,
    DBusTimeout,
    Method,
    Signal,
)
from loopkit_ui.headless_desktop import HeadlessDesktop

pytestmark = [pytest.mark.ui, pytest.mark.integration]

BUS = ("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus")


@pytest.fixture
def session_bus(headless_desktop: HeadlessDesktop) -> str:
    return headless_desktop.env["DBUS_SESSION_BUS_ADDRESS"]


@pytest.fixture
def client(session_bus: str) -> Iterator[DBusClient]:
    c = DBusClient(session_bus)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def peer(session_bus: str) -> Iterator[DBusConnection]:
    """A second connection that reads only when a test asks it to."""
    connection = open_dbus_connection(bus=session_bus)
    try:
        yield connection
    finally:
        connection.close()


def test_hello_calls_and_the_bus_knows_us(client: DBusClient) -> None:
    assert client.unique_name.startswith(":")
    names = client.call(*BUS, "ListNames")[0]
    assert client.unique_name in names
    pid = client.call(*BUS, "GetConnectionUnixProcessID", "s", (client.unique_name,))[0]
    assert pid == os.getpid()


def test_property_variants_are_unwrapped(client: DBusClient) -> None:
    # Properties.Get answers a variant: callers get the value, not (signature, value).
    features = client.call(
        *BUS[:2], "org.freedesktop.DBus.Properties", "Get", "ss", (BUS[2], "Interfaces")
    )[0]
    assert isinstance(features, list) and all(isinstance(f, str) for f in features)


def test_errors_are_dbus_call_errors(client: DBusClient) -> None:
    with pytest.raises(DBusCallError) as caught:
        client.call(*BUS, "NoSuchMethod")
    assert caught.value.name == "org.freedesktop.DBus.Error.UnknownMethod"
    with pytest.raises(DBusCallError, match="NameHasNoOwner"):
        client.call(*BUS, "GetNameOwner", "s", ("org.example.nobody",))


def test_a_burst_returns_every_reply_in_order_with_errors_in_their_slots(
    client: DBusClient, peer: DBusConnection
) -> None:
    owner = Method(BUS[0], BUS[2], "GetNameOwner", "s", ("org.freedesktop.DBus",))
    pid = Method(BUS[0], BUS[2], "GetConnectionUnixProcessID", "s", (peer.unique_name,))
    nobody = Method(BUS[0], BUS[2], "GetNameOwner", "s", ("org.example.nobody",))
    requests = [(m, BUS[1]) for _ in range(300) for m in (owner, pid, nobody)]
    replies = client.call_many(requests)
    assert len(replies) == 900
    for i in range(0, 900, 3):
        assert replies[i] == ("org.freedesktop.DBus",)
        assert replies[i + 1] == (os.getpid(),)  # the peer lives in this process
        assert isinstance(replies[i + 2], DBusCallError)


def test_a_method_is_serialised_once_per_path_and_only_the_serial_changes() -> None:
    method = Method(":1.7", C.ACCESSIBLE, "GetRole")
    first, second = method.serialise("/a/b", 5), method.serialise("/a/b", 6)
    assert first != second and len(method._cache) == 1
    parser = Parser()
    parser.add_data(first + second + method.serialise("/a/c", 7))
    parsed = [parser.get_next_message() for _ in range(3)]
    assert [m.header.serial for m in parsed if m is not None] == [5, 6, 7]
    expected = new_method_call(DBusAddress("/a/b", ":1.7", C.ACCESSIBLE), "GetRole")
    assert first == expected.serialise(serial=5)


def test_a_silent_peer_times_out_and_its_late_reply_is_dropped(
    client: DBusClient, peer: DBusConnection
) -> None:
    with pytest.raises(DBusTimeout, match=r"no D-Bus reply within 0\.3 s"):
        client.call(peer.unique_name, "/x", "org.example.X", "Ping", timeout=0.3)
    # The peer answers now, too late: the reply is dropped and the client keeps working.
    call = peer.receive(timeout=2)
    peer.send(new_method_return(call, "s", ("late",)))
    assert client.call(*BUS, "GetId")[0]


def test_signals_reach_subscribers_with_variants_unwrapped(
    client: DBusClient, peer: DBusConnection
) -> None:
    got: list[Signal] = []
    arrived = threading.Event()

    def handler(signal: Signal) -> None:
        got.append(signal)
        arrived.set()

    client.add_match("type='signal',interface='org.example.Events'")
    client.subscribe(lambda s: s.member == "Changed", handler)
    emitter = DBusAddress("/org/example/thing", interface="org.example.Events")
    peer.send(
        new_signal(emitter, "Changed", "siiv(so)", ("name", 1, 2, ("s", "Title"), (":1.1", "/p")))
    )
    assert arrived.wait(5)
    (signal,) = got
    assert signal.sender == peer.unique_name and signal.path == "/org/example/thing"
    assert signal.body == ("name", 1, 2, "Title", (":1.1", "/p"))


def test_calls_to_us_are_answered_with_an_error_not_left_hanging(
    client: DBusClient, peer: DBusConnection
) -> None:
    call = new_method_call(DBusAddress("/", client.unique_name, "org.example.X"), "Ping")
    reply = peer.send_and_get_reply(call, timeout=2)
    assert (
        reply.header.fields[HeaderFields.error_name] == "org.freedesktop.DBus.Error.UnknownMethod"
    )


def test_close_fails_waiting_calls_with_connection_error(
    client: DBusClient, peer: DBusConnection
) -> None:
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            client.call(peer.unique_name, "/x", "org.example.X", "Ping", timeout=10)
        except BaseException as error:
            errors.append(error)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)
    client.close()
    waiter.join(5)
    assert not waiter.is_alive()
    assert errors and isinstance(errors[0], ConnectionError)
    with pytest.raises(ConnectionError, match="closed"):
        client.call(*BUS, "GetId")


def test_bad_addresses_name_the_address() -> None:
    with pytest.raises(ValueError, match="tcp:host=x"):
        DBusClient("tcp:host=x,port=1")


def test_the_accessibility_bus_answers_through_the_client(
    headless_desktop: HeadlessDesktop,
) -> None:
    client = DBusClient(headless_desktop.a11y_bus_address)
    try:
        apps = client.call(C.REGISTRY, C.REGISTRY_ROOT, C.ACCESSIBLE, "GetChildren")[0]
        assert isinstance(apps, list)
        role = client.call(C.REGISTRY, C.REGISTRY_ROOT, C.ACCESSIBLE, "GetRole")[0]
        assert C.role_name(role) == "desktop frame"
    finally:
        client.close()
