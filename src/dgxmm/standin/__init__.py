"""A stand-in for vLLM's server, so tests, the demo and benchmarks run without a GPU.

    python -m dgxmm.standin --port 8001 --model demo [--host 127.0.0.1]
        [--startup-delay S] [--latency MS] [--memory-gib G] [--max-num-seqs N]

It answers like ``VLLM_SERVER_DEV_MODE=1 vllm serve MODEL --enable-sleep-mode`` on the parts
dgxmm uses, but there is no model behind it: a chat completion or completion is a fixed
sentence, given after ``--latency`` milliseconds (streamed, ``"stream": true``, one word per
chunk spread over that latency), an embedding a fixed vector made from the text.
``GET /health`` (503 while "loading" for ``--startup-delay`` seconds, like a vLLM whose
engine is not up yet), ``GET /v1/models``, ``POST /v1/chat/completions``,
``POST /v1/completions``, ``POST /v1/embeddings``, ``GET /metrics`` (vLLM's names, types and
labels), ``POST /sleep?level=1|2&mode=abort|wait`` (vLLM's default mode is ``abort``),
``POST /wake_up`` and ``GET /is_sleeping``. While it sleeps, the three OpenAI routes answer
503; ``/health``, ``/v1/models`` and ``/metrics`` still answer, as on vLLM.

Standard library only, so that it listens within a fraction of a second; threads serve
requests concurrently. SIGTERM and SIGINT shut it down cleanly (exit code 0).
"""

from __future__ import annotations

from dgxmm.standin.engine import Engine, Phase, Refused, StandinConfig
from dgxmm.standin.server import main

__all__ = ["Engine", "Phase", "Refused", "StandinConfig", "main"]
