"""Sealing with ``cryptography``'s AES-GCM; the old scheme's values opened and sealed again;
the key rotated, every value sealed again under the new key, and a backup restored with only
the new key opens every secret.
"""

from __future__ import annotations

import base64
import hmac
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from alerts.alertkit import KEY, LOOPBACK_ALLOWED, POLICY, Receiver
from sqlalchemy import text

from dgxmm.alerts import KEY_ENV, KEY_FILE, Alerts, KeyFile, Sealer, Unsealable
from dgxmm.alerts.tables import alert_channels
from dgxmm.clock import ManualClock
from dgxmm.errors import Conflict
from dgxmm.fleet import Fleet
from dgxmm.store import Store, writing


def legacy_seal(key: bytes, plain: str) -> str:
    """Seal as dgxmm did before (HMAC-SHA256 in counter mode, then HMAC): the old values."""
    encrypt = hmac.digest(key, b"dgxmm alerts: encrypt", "sha256")
    sign = hmac.digest(key, b"dgxmm alerts: authenticate", "sha256")
    nonce = secrets.token_bytes(16)
    data = plain.encode()
    stream = b"".join(
        hmac.digest(encrypt, nonce + n.to_bytes(8, "big"), "sha256")
        for n in range((len(data) + 31) // 32)
    )
    cipher = bytes(a ^ b for a, b in zip(data, stream, strict=False))
    tag = hmac.digest(sign, b"s1" + nonce + cipher, "sha256")
    return "s1:" + base64.urlsafe_b64encode(nonce + cipher + tag).decode()


def _sealed(store: Store) -> list[tuple[str, str]]:
    with store.engine.connect() as connection:
        rows = connection.execute(text("SELECT url_sealed, secret_sealed FROM alert_channels"))
        return [(row.url_sealed, row.secret_sealed) for row in rows]


def _opened(alerts: Alerts, store: Store) -> list[tuple[str, str]]:
    with store.engine.connect() as connection:
        targets = [alerts.channels.target(connection, c.id) for c in alerts.channels.list()]
    return [(t.url, t.secret) for t in targets]


def test_a_value_is_sealed_with_aes_gcm_and_opens_only_whole_and_with_its_key() -> None:
    sealer = Sealer(KEY)
    sealed = sealer.seal("https://hooks.example/T0/B0/XXXX")
    assert sealed.startswith("s2:")
    assert sealer.seal("same") != sealer.seal("same")  # a fresh nonce each time
    assert sealer.open(sealed) == "https://hooks.example/T0/B0/XXXX"
    raw = bytearray(base64.urlsafe_b64decode(sealed[3:]))
    raw[20] ^= 1
    with pytest.raises(Unsealable):
        sealer.open("s2:" + base64.urlsafe_b64encode(bytes(raw)).decode())
    with pytest.raises(Unsealable):
        Sealer(bytes(32)).open(sealed)


def test_values_sealed_by_the_old_scheme_open_and_are_sealed_again(
    alerts: Alerts, store: Store
) -> None:
    with Receiver() as receiver:
        channel, secret = alerts.channels.create(
            {"name": "ops", "url": receiver.url}, actor="user:alice"
        )
        receiver.secret = secret
        # The row as an earlier dgxmm left it.
        with writing(store.engine) as connection:
            connection.execute(
                alert_channels.update().values(
                    url_sealed=legacy_seal(KEY, receiver.url),
                    secret_sealed=legacy_seal(KEY, secret),
                )
            )
        assert _opened(alerts, store) == [(receiver.url, secret)]  # old values still open
        assert alerts.reseal() == 1  # at start: sealed again under the new scheme
        assert all(v.startswith("s2:") for v in _sealed(store)[0])
        assert alerts.reseal() == 0
        alerts.test(channel.id, actor="user:alice")
        alerts.sender.send_due()
    [got] = receiver.requests()
    assert got.signed


@pytest.fixture
def keyed(
    tmp_path: Path, store: Store, fleet: Fleet, clock: ManualClock
) -> Iterator[tuple[Alerts, Path]]:
    """Alerts whose key is kept in a data directory's ``alerts.key``, as serve keeps it."""
    data = tmp_path / "data"
    data.mkdir()
    made = Alerts(store, fleet, key=KeyFile(data, environ={}), clock=clock, policy=POLICY,
                  destinations=LOOPBACK_ALLOWED)  # fmt: skip
    yield made, data
    made.stop()


def test_rotating_the_key_seals_every_value_again_and_a_restore_opens_with_the_new_one(
    keyed: tuple[Alerts, Path], store: Store, fleet: Fleet, tmp_path: Path
) -> None:
    alerts, data = keyed
    made = [
        alerts.channels.create({"name": n, "url": f"https://hooks.example/{n}/XXXX"},
                               actor="user:alice")
        for n in ("ops", "oncall")
    ]  # fmt: skip
    secrets_by_name = {channel.name: secret for channel, secret in made}
    old_key = bytes.fromhex((data / KEY_FILE).read_text())
    before = _sealed(store)

    assert alerts.rotate_key(actor="user:alice") == 2

    new_key = bytes.fromhex((data / KEY_FILE).read_text())
    assert new_key != old_key
    assert sorted(p.name for p in data.iterdir()) == [KEY_FILE]  # no half-done rotation left
    after = _sealed(store)
    assert set(after).isdisjoint(before)
    for url_sealed, secret_sealed in after:
        for value in (url_sealed, secret_sealed):
            Sealer(new_key).open(value)
            with pytest.raises(Unsealable):
                Sealer(old_key).open(value)
    # This instance goes on sending with the new key.
    assert sorted(secret for _, secret in _opened(alerts, store)) == sorted(
        secrets_by_name.values()
    )

    store.backup(tmp_path / "backup")
    store.restore(tmp_path / "backup", tmp_path / "restored.db")
    restored = Store.open(tmp_path / "restored.db")
    restored_fleet = Fleet(restored, inventory=fleet.inventory)
    try:
        elsewhere = Alerts(restored, restored_fleet, key=new_key)  # only the new key
        opened = _opened(elsewhere, restored)
        assert sorted(opened) == sorted(
            (f"https://hooks.example/{n}/XXXX", s) for n, s in secrets_by_name.items()
        )
    finally:
        restored_fleet.close()
        restored.close()


def test_a_rotation_cut_short_is_finished_at_the_next_start(
    keyed: tuple[Alerts, Path], store: Store, fleet: Fleet, clock: ManualClock
) -> None:
    alerts, data = keyed
    alerts.channels.create({"name": "ops", "url": "https://hooks.example/x"}, actor="user:a")
    # A rotation that wrote its next key and died before sealing anything again.
    next_key = secrets.token_bytes(32)
    (data / f"{KEY_FILE}.next").write_text(next_key.hex() + "\n")
    again = Alerts(store, fleet, key=KeyFile(data, environ={}), clock=clock, policy=POLICY)
    try:
        assert again.reseal() == 1
    finally:
        again.stop()
    assert bytes.fromhex((data / KEY_FILE).read_text()) == next_key
    assert not (data / f"{KEY_FILE}.next").exists()
    [(url_sealed, _)] = _sealed(store)
    assert Sealer(next_key).open(url_sealed) == "https://hooks.example/x"


def test_a_key_given_by_the_environment_is_not_rotated_here(
    tmp_path: Path, store: Store, fleet: Fleet, clock: ManualClock
) -> None:
    given = KeyFile(tmp_path, environ={KEY_ENV: "ab" * 32})
    alerts = Alerts(store, fleet, key=given, clock=clock, policy=POLICY)
    try:
        alerts.channels.create({"name": "ops", "url": "https://hooks.example/x"}, actor="u:a")
        before = _sealed(store)
        with pytest.raises(Conflict) as refused:
            alerts.rotate_key(actor="user:alice")
    finally:
        alerts.stop()
    assert KEY_ENV in str(refused.value)
    assert _sealed(store) == before  # nothing changed
