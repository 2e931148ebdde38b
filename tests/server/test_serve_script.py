"""`scripts/serve` on a fresh machine says what it is doing before each long step.

The real install takes about a minute, so the script is run in a copy of the repository's
layout whose ``python3`` (first on PATH) makes a virtual environment that installs nothing:
what is checked is what the script prints, and in which order, around the steps it runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

FAKE_PYTHON = """#!/bin/sh
# Stands in for python3 -m venv .venv: a venv whose python installs nothing, whose dgxmm echoes.
mkdir -p .venv/bin
printf '#!/bin/sh\\necho "pip $*" >> .venv/calls\\n' > .venv/bin/python
printf '#!/bin/sh\\necho "dgxmm $*"\\n' > .venv/bin/dgxmm
chmod +x .venv/bin/python .venv/bin/dgxmm
"""


def _layout(tmp: Path) -> dict[str, str]:
    (tmp / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "serve", tmp / "scripts" / "serve")
    fetch = tmp / "scripts" / "playground-files"
    fetch.write_text("#!/bin/sh\necho 'playground-files ran'\n")
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON)
    for path in (fetch, bin_dir / "python3"):
        path.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_first_run_says_what_it_installs_before_installing(tmp_path: Path) -> None:
    env = _layout(tmp_path)
    done = subprocess.run(
        ["bash", "scripts/serve", "--port", "8123"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    said = [line for line in lines if line.startswith("scripts/serve: ")]
    assert [s.split(":")[1].split()[0] for s in said] == [
        "first", "installing", "installed", "fetching", "starting"
    ], lines  # fmt: skip
    # Each message comes before its step: the install before pip, the fetch before the files.
    assert lines.index(said[3]) < lines.index("playground-files ran") < lines.index(said[4])
    assert lines[-1] == "dgxmm serve --port 8123"
    assert "install -q -e ." in (tmp_path / ".venv" / "calls").read_text()


def test_a_later_run_says_only_that_it_starts(tmp_path: Path) -> None:
    env = _layout(tmp_path)
    subprocess.run(
        ["bash", "scripts/serve"], cwd=tmp_path, env=env, capture_output=True, check=True
    )
    files = tmp_path / "src" / "dgxmm" / "server" / "playground_files"
    files.mkdir(parents=True)
    (files / "manifest.json").write_text("{}")
    again = subprocess.run(
        ["bash", "scripts/serve"], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    said = [line for line in again.stdout.splitlines() if line.startswith("scripts/serve: ")]
    assert len(said) == 1, said
    assert said[0].startswith("scripts/serve: starting dgxmm serve"), said
