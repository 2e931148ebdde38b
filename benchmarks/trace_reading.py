"""Reading a request trace: time and peak memory for 1 and 10 million rows (issue 44, point 12).

Writes a requests CSV (``timestamp,model,input_tokens,output_tokens``, ISO 8601 instants with
an offset, eight models, arrivals a few milliseconds apart) or an Azure trace of ``--rows``
rows to a temporary file, then reads it with ``read_requests_csv`` (``read_azure_trace``) in a
fresh process, so that the peak resident memory (``ru_maxrss``) is the reading's and not the
writing's. Printed: the rows, the file's size, the reading's wall time and the process's
peak memory (the interpreter and numpy's own, about 40 MiB, included).

    .venv/bin/python benchmarks/trace_reading.py [--rows 1000000] [--azure]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_BLOCK = 100_000


def write_trace(path: Path, rows: int, *, azure: bool) -> None:
    """Write ``rows`` requests, a block at a time."""
    start_s = 1_774_850_400  # 2026-03-30T06:00:00Z
    with path.open("w", encoding="utf-8") as out:
        out.write("TIMESTAMP,ContextTokens,GeneratedTokens\n" if azure else
                  "timestamp,model,input_tokens,output_tokens\n")  # fmt: skip
        for first in range(0, rows, _BLOCK):
            lines = []
            for k in range(first, min(rows, first + _BLOCK)):
                micros = k * 3_217
                seconds, fraction = divmod(micros, 1_000_000)
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(start_s + seconds))
                if azure:
                    lines.append(f"{stamp}.{fraction:06d}0,{812 + k % 97},{95 + k % 13}\n")
                else:
                    iso = f"{stamp.replace(' ', 'T')}.{fraction:06d}+00:00"
                    lines.append(f"{iso},model-{k % 8},{812 + k % 97},{95 + k % 13}\n")
            out.write("".join(lines))


def read_and_report(path: str, azure: bool) -> None:
    """Read the trace in this process; print its rows, the time and the peak memory."""
    from dgxmm.lab import read_azure_trace, read_requests_csv

    began = time.perf_counter()
    trace = read_azure_trace(path, "m") if azure else read_requests_csv(path)
    took = time.perf_counter() - began
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"read {len(trace):,} rows in {took:.1f} s; peak memory {peak_mib:,.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--azure", action="store_true", help="the Azure trace's format")
    parser.add_argument("--read", help=argparse.SUPPRESS)  # the reading process's file
    args = parser.parse_args()
    if args.read:
        read_and_report(args.read, args.azure)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.csv"
        write_trace(path, args.rows, azure=args.azure)
        size_mib = path.stat().st_size / 2**20
        print(f"{args.rows:,} rows, {size_mib:,.0f} MiB of CSV", flush=True)
        command = [sys.executable, __file__, "--read", str(path)]
        subprocess.run(command + (["--azure"] if args.azure else []), check=True, env=os.environ)


if __name__ == "__main__":
    main()
