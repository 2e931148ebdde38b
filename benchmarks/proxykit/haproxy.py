"""The reference: Debian's HAProxy in front of the same stand-ins, with its config."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx

from proxykit.fleet import free_port
from proxykit.load import CHAT


def _haproxy() -> str | None:
    """Return HAProxy's binary, installing Debian's package first when we may (root, apt)."""
    search = os.environ.get("PATH", "") + ":/usr/sbin"
    if (
        shutil.which("haproxy", path=search) is None
        and os.geteuid() == 0
        and shutil.which("apt-get")
    ):
        print("installing Debian's haproxy (apt-get install haproxy) to measure beside it")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", "haproxy"]
        if subprocess.run(install, env=env, capture_output=True, check=False).returncode:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
            subprocess.run(install, env=env, capture_output=True, check=False)
    return shutil.which("haproxy", path=search)


def start_haproxy(
    workdir: Path, standin: str, slow: str
) -> tuple[subprocess.Popen[bytes], str] | None:
    """Start Debian's HAProxy in front of the stand-ins (the slow model's requests to its own)."""
    binary = _haproxy()
    if binary is None:
        return None
    port = free_port()
    server = standin.removeprefix("http://")
    slow_server = slow.removeprefix("http://")
    config = workdir / "haproxy.cfg"
    config.write_text(
        "global\n  maxconn 4096\n"
        "defaults\n  mode http\n  timeout connect 5s\n  timeout client 60s\n"
        "  timeout server 60s\n  option http-keep-alive\n  option http-buffer-request\n"
        f"frontend front\n  bind 127.0.0.1:{port}\n"
        "  acl slow req.body -m sub bench-slow\n  use_backend slow if slow\n"
        "  default_backend standin\n"
        f"backend standin\n  server s1 {server}\n"
        f"backend slow\n  server s2 {slow_server}\n"
    )  # fmt: skip
    process = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=CHAT, timeout=2,
                       trust_env=False)  # fmt: skip
            return process, f"http://127.0.0.1:{port}"
        except httpx.TransportError:
            if process.poll() is not None:
                print(
                    "HAProxy did not start:",
                    process.stderr.read().decode() if process.stderr else "",
                )
                return None
            time.sleep(0.05)
    process.kill()
    return None
