"""Namespaces, veths and raw-socket capture of the HIL engine (root, no BMv2 needed)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hil.capture import Capture
from hil.netns import PREFIX, Namespace, NetnsError, namespaces, remove_stale, unique_name

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root (network namespaces, veth pairs, raw sockets)")

REPO = Path(__file__).resolve().parents[2]


def test_unique_names_carry_the_pid():
    a, b = unique_name(), unique_name()
    assert a != b and a.startswith(f"{PREFIX}{os.getpid()}-")


def test_namespace_and_veths_are_removed_on_exit():
    with Namespace() as ns:
        ns.add_veth("x1", "y1")
        assert ns.name in namespaces()
        links = subprocess.run(["ip", "-n", ns.name, "-o", "link"], capture_output=True,
                               text=True, check=True).stdout
        assert "x1@y1" in links and "y1@x1" in links
        off = subprocess.run(ns.exec_argv(["cat", "/proc/sys/net/ipv6/conf/x1/disable_ipv6"]),
                             capture_output=True, text=True, check=True).stdout.strip()
        assert off == "1"  # no router solicitations or DAD frames on the veths
    assert ns.name not in namespaces()


def test_namespace_is_removed_when_the_body_raises():
    with pytest.raises(RuntimeError, match="boom"):
        with Namespace() as ns:
            ns.add_veth("x1", "y1")
            raise RuntimeError("boom")
    assert ns.name not in namespaces()


def test_bad_interface_name_is_a_clear_error():
    with Namespace() as ns, pytest.raises(NetnsError, match="1 to 15 characters"):
        ns.add_veth("a-name-that-is-too-long", "b")


def test_capture_sees_exact_bytes_and_direction():
    frame = bytes.fromhex("ffffffffffff020000000001" "9999") + bytes(range(40))
    with Namespace() as ns:
        ns.add_veth("x1", "y1")
        with Capture(ns, {"x": "x1", "tap": "x1", "y": "y1"}) as cap:
            cap.drain()
            cap.send("x", frame)
            got = cap.collect(0.1, 2.0)
    # the sending socket does not see its own frame; another socket on x1 sees it leave
    assert sorted((f.key, f.outgoing, f.data) for f in got) == [
        ("tap", True, frame), ("y", False, frame)]


def test_veths_live_only_in_the_namespace():
    with Namespace() as ns:
        ns.add_veth("x1", "y1")
        root_sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        try:
            with pytest.raises(OSError):  # no x1 in the root namespace
                root_sock.bind(("x1", 0))
        finally:
            root_sock.close()
        ns.packet_socket("x1").close()  # but there is one inside


def test_stale_namespaces_of_dead_processes_are_removed():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    stale = Namespace(f"{PREFIX}{proc.pid}-dead00")
    stale.create()
    mine = Namespace()
    mine.create()
    try:
        removed = remove_stale()
        assert stale.name in removed and stale.name not in namespaces()
        assert mine.name in namespaces()  # our own process is alive: kept
    finally:
        mine.delete()
        stale.delete()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_removes_the_namespace(sig):
    code = textwrap.dedent("""
        import sys, time
        from hil.netns import Namespace, signals_as_interrupt
        with signals_as_interrupt(), Namespace() as ns:
            ns.add_veth("x1", "y1")
            print(ns.name, flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    name = proc.stdout.readline().strip()
    assert name in namespaces()
    proc.send_signal(sig)
    proc.wait(timeout=20)
    assert "KeyboardInterrupt" in proc.stderr.read()
    deadline = time.monotonic() + 5
    while name in namespaces() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert name not in namespaces()
