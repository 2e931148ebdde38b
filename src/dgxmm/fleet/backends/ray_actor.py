"""What runs inside Ray: the actor that keeps one model server, and the task that reads GPUs.

It imports nothing of dgxmm (``tests/test_layers.py`` holds it to that): the Ray backend
ships this module to the nodes by value, so a node needs Ray and the model server's own
software, not dgxmm.

- ``ServerActor`` launches the command as its child in a session of its own, with the
  environment Ray gave the actor (``CUDA_VISIBLE_DEVICES`` for its GPUs) plus the
  deployment's. The child gets ``SIGKILL`` when the actor's process dies
  (``PR_SET_PDEATHSIG``): a server must not outlive the actor that holds its GPUs, or Ray
  would hand them to another while it still runs.
- ``read_node_gpus`` asks NVML for the node's GPUs; it reports an error instead of raising.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["LOG_TAIL_MARK", "ServerActor", "read_node_gpus"]

# fleet/backends/protocol.py's LOG_TAIL_MARK, written again: this module imports nothing of
# ours (it is shipped to Ray's nodes); tests/fleet/test_process_backend.py checks they agree.
LOG_TAIL_MARK = "; last lines of "

_PR_SET_PDEATHSIG = 1
_POLL_S = 0.05
_KILL_WAIT_S = 10.0


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: ask the kernel to kill it with its parent.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class ServerActor:
    """Holds one model server as its child, on the node and GPUs Ray placed the actor on."""

    def __init__(self, argv: list[str], env: dict[str, str], port: int | None, name: str) -> None:
        import ray

        context = ray.get_runtime_context()
        self._host = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call, unused-ignore]
        self._node_id = context.get_node_id()
        self._gpus = [int(str(gpu)) for gpu in ray.get_gpu_ids()]
        self._port = port or _free_port(self._host)
        command = [
            arg.replace("{port}", str(self._port)).replace("{host}", self._host) for arg in argv
        ]
        log_dir = Path(tempfile.gettempdir()) / "dgxmm-ray"
        log_dir.mkdir(parents=True, exist_ok=True)
        self._log_path = log_dir / f"{name}.log"
        with self._log_path.open("ab") as log:
            log.write(f"=== dgxmm: starting {command} ===\n".encode())
            log.flush()
            self._popen = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **env},
                start_new_session=True,
                close_fds=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - a prctl call, no locks taken
            )

    def info(self) -> dict[str, Any]:
        """Return where the server runs: its URL, node, GPUs and pid."""
        return {
            "url": f"http://{self._host}:{self._port}",
            "node_id": self._node_id,
            "node_address": self._host,
            "gpus": self._gpus,
            "pid": self._popen.pid,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }

    def status(self) -> dict[str, Any]:
        """Return whether the server still runs and, when not, how it ended."""
        code = self._popen.poll()
        if code is None:
            return {"running": True, "detail": f"process {self._popen.pid} runs"}
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return {"running": False, "detail": f"its server process {how}{self._log_tail()}"}

    def stop(self, grace_s: float) -> str:
        """SIGTERM the server's process group, SIGKILL what outlives the grace period."""
        if self._popen.poll() is not None and not self._group_alive():
            return "not_running"
        self._signal(signal.SIGTERM)
        if self._wait_gone(grace_s):
            return "terminated"
        self._signal(signal.SIGKILL)
        if self._wait_gone(_KILL_WAIT_S):
            return "killed"
        return "still_running"

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, sig)

    def _group_alive(self) -> bool:
        try:
            os.killpg(self._popen.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _wait_gone(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            self._popen.poll()
            if self._popen.returncode is not None and not self._group_alive():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)

    def _log_tail(self, lines: int = 5) -> str:
        try:
            with self._log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
                tail = log.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        kept = [line for line in tail if line.strip()][-lines:]
        return f"{LOG_TAIL_MARK}{self._log_path}: " + " | ".join(kept) if kept else ""


def read_node_gpus() -> dict[str, Any]:
    """Return this node's GPUs from NVML (``{"gpus": [...]}``), or why it cannot tell."""
    try:
        import pynvml
    except ImportError as err:
        return {"error": f"nvidia-ml-py is not installed on the node ({err})"}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        return {"error": f"NVML cannot start: {err}"}
    try:
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            gpus.append(
                {
                    "index": index,
                    "name": name.decode() if isinstance(name, bytes) else str(name),
                    "memory_gib": pynvml.nvmlDeviceGetMemoryInfo(handle).total / 1024**3,
                }
            )
    except pynvml.NVMLError as err:
        return {"error": f"NVML failed while listing GPUs: {err}"}
    finally:
        pynvml.nvmlShutdown()
    return {"gpus": gpus}
