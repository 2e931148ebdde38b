"""What a viewer reads of a deployment: secrets masked, the model server's output left out."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from fastapi.testclient import TestClient
from support import free_port

from dgxmm.fleet import LOG_TAIL_MARK, BackendKind, Deployment, DeploymentState
from dgxmm.server.access.redaction import (
    deployment_shown_to,
    masked_command,
    masked_text,
    public_text,
)
from dgxmm.server.access.tokens import Identity, Role

# What the model server printed, what its command and environment hold: none of it may
# reach a viewer, in any answer or page.
PRINTED = "loaded-weights-for-customer-acme"
SECRETS = ("sk-abc123456789", "hf_abcdefghijkl", "hf_fromtheenvironment", "s3cr3t-pw", "hunter2")
# A model server that dies at once, after one line of output (not in its command line).
FAILING = "import sys; print('loaded-weights-' + 'for-customer-acme'); sys.exit(3)"


def _failed_process(admin: TestClient) -> dict[str, Any]:
    keys = {
        "name": "leaky",
        "model": "leaky-model",
        "backend": "process",
        "command": [
            sys.executable,
            "-c",
            FAILING,
            "--api-key",
            SECRETS[0],
            "--hf-token=" + SECRETS[1],
            "--password",
            SECRETS[3],
            "--port",
            "{port}",
        ],
        "port": free_port(),
        "environment": {"HF_TOKEN": SECRETS[2], "CUDA_LAUNCH_BLOCKING": "1"},
        "gpus": [0],
        "memory_gib_awake": 10.0,
        "startup_timeout_s": 30.0,
    }
    made = admin.post("/api/deployments", json=keys)
    assert made.status_code == 201, made.text
    started = admin.post(f"/api/deployments/{made.json()['id']}/start")
    assert started.status_code == 502, started.text
    deployment: dict[str, Any] = admin.get(f"/api/deployments/{made.json()['id']}").json()
    assert deployment["state"] == "failed"
    return deployment


def _failed_external(admin: TestClient) -> dict[str, Any]:
    keys = {
        "name": "remote",
        "model": "remote-model",
        "backend": "external",
        "base_url": f"http://bob:{SECRETS[4]}@127.0.0.1:{free_port()}/v1",
        "startup_timeout_s": 5.0,
    }
    made = admin.post("/api/deployments", json=keys)
    assert made.status_code == 201, made.text
    admin.post(f"/api/deployments/{made.json()['id']}/start")
    deployment: dict[str, Any] = admin.get(f"/api/deployments/{made.json()['id']}").json()
    return deployment


def _leaks(text: str) -> list[str]:
    return [secret for secret in (PRINTED, *SECRETS) if secret in text]


def test_it_shows_a_viewer_a_failed_deployment_without_its_secrets_or_its_log(
    full_admin: TestClient, full_viewer: TestClient
) -> None:
    whole = _failed_process(full_admin)
    assert PRINTED in whole["last_error"]  # the admin reads the log tail: the test can fail
    assert SECRETS[2] == whole["environment"]["HF_TOKEN"]
    seen = full_viewer.get(f"/api/deployments/{whole['id']}")
    listed = full_viewer.get("/api/deployments")
    for answer in (seen, listed):
        assert answer.status_code == 200
        assert _leaks(answer.text) == []
    shown = seen.json()
    assert shown["environment"] == {"HF_TOKEN": "***", "CUDA_LAUNCH_BLOCKING": "***"}
    assert shown["command"][3:9] == [
        "--api-key",
        "***",
        "--hf-token=***",
        "--password",
        "***",
        "--port",
    ]
    assert shown["last_error"] == whole["last_error"].split("; last lines of ")[0]
    assert "exited with code 3" in shown["last_error"]  # what happened stays readable
    assert listed.json()["deployments"] == [shown]


def test_it_keeps_the_log_tail_from_a_viewers_events_and_insights(
    full_admin: TestClient, full_viewer: TestClient
) -> None:
    whole = _failed_process(full_admin)
    events = f"/api/deployments/{whole['id']}/events"
    assert PRINTED in full_admin.get(events).text
    assert PRINTED in full_admin.get("/api/insights").text
    for path in (events, "/api/insights"):
        answer = full_viewer.get(path)
        assert answer.status_code == 200
        assert _leaks(answer.text) == [], path
    assert any(
        "exited with code 3" in e["detail"] for e in full_viewer.get(events).json()["events"]
    )


def test_it_masks_a_urls_password_for_a_viewer(
    full_admin: TestClient, full_viewer: TestClient
) -> None:
    whole = _failed_external(full_admin)
    assert SECRETS[4] in whole["base_url"]
    shown = full_viewer.get(f"/api/deployments/{whole['id']}").json()
    assert shown["base_url"] == whole["base_url"].replace(SECRETS[4], "***")
    assert shown["url"] == shown["base_url"]
    assert _leaks(full_viewer.get("/api/deployments").text) == []


def test_the_pages_show_a_viewer_no_secrets(
    full_admin: TestClient, full_viewer: TestClient
) -> None:
    process = _failed_process(full_admin)
    _failed_external(full_admin)
    html = {"Accept": "text/html"}
    page = f"/deployments/{process['id']}"
    assert PRINTED in full_admin.get(page, headers=html).text
    for path in ("/deployments", page, f"{page}/edit", "/insights"):
        answer = full_viewer.get(path, headers=html)
        assert answer.status_code == 200, path
        assert _leaks(answer.text) == [], path
    assert "--api-key ***" in full_viewer.get(page, headers=html).text
    # Where the server's log lies names the data directory: an admin's to know.
    log = "/server.log</code>"
    assert log in full_admin.get(page, headers=html).text
    assert log not in full_viewer.get(page, headers=html).text


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        pytest.param(["vllm", "--api-key", "abc"], ["vllm", "--api-key", "***"], id="flag-value"),
        pytest.param(["--token=abc"], ["--token=***"], id="flag-equals"),
        pytest.param(["--HF_TOKEN", "x"], ["--HF_TOKEN", "***"], id="any-case-underscores"),
        pytest.param(["env", "HF_TOKEN=x", "vllm"], ["env", "HF_TOKEN=***", "vllm"], id="env-arg"),
        pytest.param(["--auth", "--port", "8"], ["--auth", "--port", "8"], id="switch-flag"),
        pytest.param(["--model", "sk-abcdefgh"], ["--model", "***"], id="key-like-anywhere"),
        pytest.param(["--x=hf_abcdefghi"], ["--x=***"], id="key-like-after-equals"),
        pytest.param(
            ["--max-num-batched-tokens", "8192", "--tokenizer", "t/t"],
            ["--max-num-batched-tokens", "8192", "--tokenizer", "t/t"],
            id="words-that-only-contain-token",
        ),
        pytest.param(["--url", "http://u:pw@h/v1"], ["--url", "http://u:***@h/v1"], id="url"),
        pytest.param(
            ["bash", "-c", "exec vllm serve m --api-key S1 --hf-token=S2 --port 8"],
            ["bash", "-c", "exec vllm serve m --api-key *** --hf-token=*** --port 8"],
            id="shell-string",
        ),
        pytest.param(
            ["sh", "-c", "vllm --api-key 'my secret' --port 8"],
            ["sh", "-c", "vllm --api-key *** --port 8"],
            id="shell-string-quoted-value",
        ),
        pytest.param(
            ["sh", "-c", 'env HF_TOKEN=S1 vllm --password="a b"'],
            ["sh", "-c", "env HF_TOKEN=*** vllm --password=***"],
            id="shell-string-equals",
        ),
        pytest.param(["--api-keys", "S3"], ["--api-keys", "***"], id="plural-keys"),
        pytest.param(["--hf-tokens=a,b"], ["--hf-tokens=***"], id="plural-equals"),
        pytest.param(["--db-passwords", "x"], ["--db-passwords", "***"], id="plural-passwords"),
        pytest.param(
            ["--max-tokens", "512", "--max-num-batched-tokens=8192"],
            ["--max-tokens", "512", "--max-num-batched-tokens=8192"],
            id="plural-with-a-count",
        ),
        pytest.param(["--passphrase", "x"], ["--passphrase", "***"], id="passphrase"),
        pytest.param(["--bearer", "x"], ["--bearer", "***"], id="bearer"),
        pytest.param(
            ["--header", "Authorization: Bearer S4"],
            ["--header", "Authorization: Bearer ***"],
            id="authorization-header",
        ),
        # A short flag says too little to mask by its name (curl's -k is --insecure); a
        # value that looks like a key is masked all the same.
        pytest.param(["-k", "v", "-k", "sk-abcdefgh"], ["-k", "v", "-k", "***"], id="short-flag"),
    ],
)
def test_it_masks_secret_looking_arguments(command: list[str], shown: list[str]) -> None:
    assert list(masked_command(command)) == shown


def test_it_masks_the_reviewers_command() -> None:
    command = [
        "bash",
        "-c",
        "exec vllm serve m --api-key S1 --hf-token=S2",
        "--api-keys",
        "S3",
        "--header",
        "Authorization: Bearer S4",
    ]
    shown = " ".join(masked_command(command))
    assert [secret for secret in ("S1", "S2", "S3", "S4") if secret in shown] == []
    assert "--api-key *** --hf-token=***" in shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("Authorization: Bearer abc.def", "Authorization: Bearer ***", id="header"),
        pytest.param(
            "curl -H 'authorization: Basic dXNlcg=='",
            "curl -H 'authorization: Basic ***'",
            id="basic",
        ),
        pytest.param("sent bearer eyJhbGciOi to it", "sent bearer *** to it", id="bearer-word"),
        pytest.param("Authorization=s3cr3t", "Authorization=***", id="bare-authorization"),
    ],
)
def test_it_masks_a_credential_after_bearer_or_authorization(text: str, shown: str) -> None:
    assert masked_text(text) == shown


def test_it_masks_key_like_words_and_url_passwords_in_text() -> None:
    assert masked_text("GET https://a:b@x.example/v1 with sk-proj-12345678") == (
        "GET https://a:***@x.example/v1 with ***"
    )
    assert masked_text("no secret at https://x.example/") == "no secret at https://x.example/"
    assert public_text("the process exited; last lines of /d/server.log: a | b") == (
        "the process exited"
    )
    assert public_text(None) is None


def test_it_keeps_the_log_tail_and_secrets_from_a_viewers_idle_pause() -> None:
    # A failed idle step pauses the idle policy with the server's error, which quotes its log
    # tail as last_error does (found by a review: the pause was shown to viewers whole).
    paused = (
        f"the idle sleep failed: sleep answered 500 --api-key sk-abc123{LOG_TAIL_MARK}{PRINTED}"
    )
    deployment = Deployment(
        id=1, name="d", model="m", backend=BackendKind.EXTERNAL, command=None, port=None,
        environment={}, base_url="http://127.0.0.1:9", gpus=(), memory_gib_awake=1.0,
        memory_gib_asleep=0.0, priority=50, time_zone="UTC", startup_timeout_s=60.0,
        state=DeploymentState.RUNNING, state_since=0, last_error=None, last_request_at=None,
        created_at=0, updated_at=0, idle_paused=paused,
    )  # fmt: skip
    viewer = deployment_shown_to(deployment, Identity(name="v", role=Role.VIEWER))
    admin = deployment_shown_to(deployment, Identity(name="a", role=Role.ADMIN))
    assert admin.idle_paused == paused
    assert viewer.idle_paused is not None
    assert viewer.idle_paused.startswith("the idle sleep failed: sleep answered 500")
    assert _leaks(viewer.idle_paused) == []
    assert "sk-abc123" not in viewer.idle_paused
