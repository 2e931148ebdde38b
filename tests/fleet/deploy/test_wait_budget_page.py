"""A deployment's wait budget as its form and its page show it (issue 42, point 4): none, not
yet computed, what was chosen and why from what the daily job recorded, or that the budget
could not be met; and only while the budget is the one it was found for."""

from __future__ import annotations

import html

from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.decider.idle import Traffic, Trial, WaitBudgets
from dgxmm.fleet import Deployment, Fleet

DAY_US = 86_400_000_000


def _budgets(fleet: Fleet, *, mean_s: float) -> WaitBudgets:
    """The job, over a fake replay of 28 days: ``mean_s / price`` of mean wait."""

    def traffic(deployment: Deployment, now_us: int) -> Traffic:
        def replay(price: float) -> Trial:
            return Trial(price=price, freed_gib_h=412.0 + 10 / price,
                         wait_mean_s=mean_s / price, wait_p99_all_s=2.0)  # fmt: skip

        return Traffic(start_us=now_us - 28 * DAY_US, end_us=now_us, requests=5000,
                       capped=False, replay=replay)  # fmt: skip

    return WaitBudgets(fleet.store, fleet, replay=traffic)


def test_the_form_takes_a_budget_in_two_boxes(client: TestClient, fleet: Fleet) -> None:
    new = client.get("/deployments/new").text
    assert 'data-field="idle_wait_budget" data-kind="budget"' in new
    assert 'name="idle_wait_budget_mean_ms" id="f-idle_wait_budget"' in new
    made = fleet.deployments.create(
        actor="user:a", **standin("chat"), idle_wait_budget={"mean_ms": 50, "p99_s": 5}
    )
    form = client.get(f"/deployments/{made.id}/edit").text
    assert 'placeholder="mean ms" value="50"' in form
    assert 'placeholder="p99 s" value="5"' in form
    # Either alone: the other box is empty (a budget of a mean alone once answered 500).
    for given, mean, p99 in (({"mean_ms": 20}, "20", ""), ({"p99_s": 2.5}, "", "2.5")):
        fleet.deployments.update(made.id, "user:a", idle_wait_budget=given)
        answer = client.get(f"/deployments/{made.id}/edit")
        assert answer.status_code == 200
        assert f'placeholder="mean ms" value="{mean}"' in answer.text
        assert f'placeholder="p99 s" value="{p99}"' in answer.text


def test_a_deployment_without_a_budget_says_so(client: TestClient, fleet: Fleet) -> None:
    made = fleet.deployments.create(actor="user:a", **standin("chat"), idle_policy="priced")
    page = html.unescape(client.get(f"/deployments/{made.id}").text)
    assert 'data-state="none">none: the priced policy decides at the standard price 0.1' in page


def test_the_page_says_what_was_chosen_and_why_until_the_budget_changes(
    client: TestClient, fleet: Fleet
) -> None:
    made = fleet.deployments.create(
        actor="user:a", **standin("chat"), idle_policy="priced", idle_wait_budget={"mean_ms": 50}
    )
    path = f"/deployments/{made.id}"
    page = html.unescape(client.get(path).text)
    assert 'data-state="pending"' in page
    assert "50 ms mean added wait: not yet computed for this budget" in page

    [choice] = _budgets(fleet, mean_s=0.0038).refresh()
    assert choice.met
    page = html.unescape(client.get(path).text)
    assert 'data-state="met"' in page
    freed = f"{choice.chosen.freed_gib_h:,.0f}" if choice.chosen else ""
    wait = f"{choice.chosen.wait_mean_s * 1000:,.0f}" if choice.chosen else ""
    assert (
        f"50 ms mean added wait: on the last 28 days: {freed} GiB-h freed, {wait} ms mean "
        f"added wait, 2.0 s p99, within the budget of 50 ms mean added wait, at a price of "
        f"{choice.price:g} GiB-h a request-second"
    ) in page
    assert f"price of waiting of {choice.price:g} GiB-hours a request-second (the price its" in page
    assert "(computed <time" in client.get(path).text

    fleet.deployments.update(made.id, "user:a", idle_wait_budget={"mean_ms": 10})
    page = html.unescape(client.get(path).text)
    assert "10 ms mean added wait: not yet computed for this budget" in page
    assert "price of waiting of 0.1 GiB-hours a request-second (the standard price" in page


def test_a_budget_no_price_meets_is_said_to_be_unmet(client: TestClient, fleet: Fleet) -> None:
    made = fleet.deployments.create(
        actor="user:a", **standin("chat"), idle_wait_budget={"mean_ms": 50, "p99_s": 1}
    )
    [choice] = _budgets(fleet, mean_s=0.0038).refresh()
    assert not choice.met
    page = html.unescape(client.get(f"/deployments/{made.id}").text)
    assert 'data-state="not_met"' in page
    assert "the budget of 50 ms mean added wait, 1 s p99 could not be met by any price" in page
    assert "it decides at the dearest, 100 GiB-h a request-second" in page
    assert "It applies to the priced idle policy only; this deployment's is ladder." in page


def test_the_api_says_what_the_budget_chose_and_the_price_it_decides_at(
    client: TestClient, viewer: TestClient, fleet: Fleet
) -> None:
    made = fleet.deployments.create(actor="user:a", **standin("chat"), idle_policy="priced")
    path = f"/api/deployments/{made.id}/wait-budget"
    none = viewer.get(path).json()
    assert (none["budget"], none["state"], none["price"], none["choice"]) == (
        None, "none", 0.1, None
    )  # fmt: skip
    client.patch(f"/api/deployments/{made.id}", json={"idle_wait_budget": {"mean_ms": 50}})
    assert viewer.get(path).json()["state"] == "pending"
    [choice] = _budgets(fleet, mean_s=0.0038).refresh()
    shown = viewer.get(path).json()
    assert (shown["budget"], shown["state"], shown["price"]) == (
        {"mean_ms": 50.0}, "met", choice.price
    )  # fmt: skip
    assert shown["says"].startswith("50 ms mean added wait: on the last 28 days: ")
    assert shown["choice"]["met"] is True
    assert len(shown["choice"]["trials"]) == len(choice.trials)
    assert viewer.get("/api/deployments/999/wait-budget").status_code == 404
