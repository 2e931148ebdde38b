"""The pages in real Chromium: define through the form, a refused field, the switch, Run now,
the history chart, saved queries and the store page."""

from __future__ import annotations

import threading
import time
from typing import Any

from browser.browserkit import Live


def test_it_defines_a_job_through_the_form_with_a_live_preview(page: Any, live: Live) -> None:
    page.click("#new-job")
    page.fill("#name", "nightly_checkpoint")
    page.check("input[name=action][value=checkpoint]")
    page.select_option("#presets", "0 3 * * 1-5")
    preview = page.locator("#preview")
    preview.get_by_text("at 03:00, Monday to Friday").wait_for()
    assert preview.locator("li").count() == 5
    page.fill("#description", "made in a browser")
    page.click("#save")
    page.wait_for_url("**/jobs")
    page.locator("#flash").get_by_text("nightly_checkpoint defined").wait_for()
    row = page.locator("tr[data-job=nightly_checkpoint]")
    assert "0 3 * * 1-5" in row.locator(".schedule").inner_text()
    assert live.store.job("nightly_checkpoint").definition["description"] == "made in a browser"


def test_it_defines_a_job_in_its_own_zone_with_a_preview_in_that_zone(
    page: Any, live: Live
) -> None:
    page.goto("/jobs/new")
    page.fill("#name", "tokyo_checkpoint")
    page.check("input[name=action][value=checkpoint]")
    page.fill("#schedule", "0 9 * * *")
    page.fill("#time_zone", "Mars/Base")
    page.click("#save")
    page.locator("[data-error-for=time_zone]").get_by_text("unknown time zone").wait_for()
    assert page.locator("#time_zone").get_attribute("aria-invalid") == "true"
    assert live.store.jobs() == []
    page.select_option("#zone-presets", "Asia/Tokyo")
    page.locator("#preview").get_by_text("(Asia/Tokyo)").wait_for()
    assert page.locator("#preview li").first.inner_text().endswith("09:00:00+09:00")
    page.click("#save")
    page.wait_for_url("**/jobs")
    row = page.locator("tr[data-job=tokyo_checkpoint]")
    assert row.locator(".job-zone").inner_text() == "in Asia/Tokyo"
    assert live.store.job("tokyo_checkpoint").definition["time_zone"] == "Asia/Tokyo"
    page.goto("/jobs/new?edit=tokyo_checkpoint")
    assert page.locator("#time_zone").input_value() == "Asia/Tokyo"


def test_a_late_preview_answer_never_replaces_a_newer_one(page: Any, live: Live) -> None:
    # Under load in CI, the preview for a zone typed earlier answered after the one for the
    # zone picked later and put its error in the newer one's place.
    page.goto("/jobs/new")
    held: list[Any] = []
    page.route("**/api/jobs/preview*Mars*", lambda route: held.append(route))  # noqa: PLW0108 (Playwright wraps Python functions, not builtins)
    page.fill("#schedule", "0 9 * * *")
    page.fill("#time_zone", "Mars/Base")
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert held, "the preview for Mars/Base was never asked"
    page.select_option("#zone-presets", "Asia/Tokyo")
    page.locator("#preview").get_by_text("(Asia/Tokyo)").wait_for()
    held[0].continue_()  # the older question's answer (an unknown zone) arrives last
    page.wait_for_function(
        "() => performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes('Mars')).every(e => e.responseEnd > 0)"
    )
    page.wait_for_timeout(200)
    assert "(Asia/Tokyo)" in page.locator("#preview").inner_text()


def test_it_shows_a_refused_jobs_message_beside_its_field(page: Any, live: Live) -> None:
    page.goto("/jobs/new")
    page.fill("#name", "broken")
    page.check("input[name=action][value=checkpoint]")
    page.fill("#schedule", "61 * * * *")
    page.click("#save")
    slot = page.locator("[data-error-for=schedule]")
    slot.get_by_text("minute: 61 is out of range 0-59").wait_for()
    assert page.locator("[data-error-for=name]").inner_text() == ""
    assert page.url.endswith("/jobs/new")
    assert live.store.jobs() == []


def test_it_marks_every_refused_field_of_a_job(page: Any, live: Live) -> None:
    page.goto("/jobs/new")
    page.fill("#name", "broken")
    page.check("input[name=action][value=checkpoint]")
    page.fill("#schedule", "61 * * * *")
    page.fill("#timeout", "-5")
    page.click("#save")
    page.locator("[data-error-for=schedule]").get_by_text("minute: 61").wait_for()
    # In the form's unit, seconds, not the API's milliseconds ("got -5000").
    timeout = page.locator("[data-error-for=timeout_ms]")
    timeout.get_by_text("-5 s is not a positive number of seconds").wait_for()
    assert "5000" not in timeout.inner_text()
    assert page.locator("#schedule").get_attribute("aria-invalid") == "true"
    assert page.locator("#timeout").get_attribute("aria-invalid") == "true"
    assert page.locator("#name").get_attribute("aria-invalid") is None
    assert live.store.jobs() == []


def test_it_shows_a_refused_argument_beside_the_arguments(page: Any, live: Live) -> None:
    live.store.define_query("add", {"label": "string"}, "SELECT :label")
    page.goto("/jobs/new")
    page.fill("#name", "q")
    page.select_option("#query", "add")
    page.fill("#args", '{"label": 5}')
    page.fill("#schedule", "0 3 * * *")
    page.click("#save")
    page.locator("[data-error-for=args]").get_by_text("label").wait_for()
    assert live.store.jobs() == []


def test_it_switches_a_job_off_and_on(page: Any, live: Live) -> None:
    live.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    page.reload()
    switch = page.locator("tr[data-job=cp] input[data-action=enable]")
    assert switch.is_checked()
    switch.uncheck()
    page.click("#pause [data-pause=no]")  # asked for a note; cancelled: it stays on
    page.wait_for_function("() => document.querySelector('tr[data-job=cp] input').checked")
    assert live.store.job("cp").enabled is True
    switch.uncheck()
    page.fill("#pause-note", "the disk is being replaced")
    page.click("#pause [data-pause=yes]")
    page.locator("tr[data-job=cp] .why").get_by_text("switched off").wait_for()
    page.locator("tr[data-job=cp] .pause-note").get_by_text("the disk is being replaced").wait_for()
    assert live.store.job("cp").enabled is False
    assert live.store.job("cp").pause_note == "the disk is being replaced"
    page.goto("/jobs/cp")
    page.locator("#job-state .pause-note").get_by_text("the disk is being replaced").wait_for()
    page.locator("input[data-action=enable]").check()
    page.wait_for_function("() => !document.querySelector('#job-state .pause-note')")
    assert live.store.job("cp").enabled is True
    page.locator("input[data-action=enable]").uncheck()
    page.click("#pause [data-pause=yes]")  # no note: switched off all the same
    page.locator("#job-state .why").get_by_text("switched off").wait_for()
    assert (live.store.job("cp").enabled, live.store.job("cp").pause_note) == (False, None)


def test_it_runs_a_job_now_and_updates_its_row_in_place(page: Any, live: Live) -> None:
    live.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    page.reload()
    assert "never" in page.locator("tr[data-job=cp] .last").inner_text()
    page.evaluate("window.loadedOnce = true")  # gone if the page reloads
    page.click("tr[data-job=cp] button[data-action=run]")
    page.locator("#flash .notice").get_by_text("cp: succeeded").wait_for()
    page.locator("tr[data-job=cp] .last").get_by_text("succeeded").wait_for()
    assert page.locator("tr[data-job=cp] .count").inner_text() == "1"
    assert page.evaluate("window.loadedOnce") is True
    page.click("#flash .notice button[aria-label=Dismiss]")
    assert page.locator("#flash .notice").count() == 0


def test_it_shows_a_run_started_elsewhere_without_a_reload(page: Any, live: Live) -> None:
    live.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    page.reload()
    page.evaluate("window.loadedOnce = true")
    live.host.run_now("cp")
    page.locator("tr[data-job=cp] .last").get_by_text("succeeded").wait_for()
    assert page.evaluate("window.loadedOnce") is True


def test_it_opens_the_history_chart(page: Any, live: Live) -> None:
    live.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    for _ in range(3):
        live.host.run_now("cp")
    page.click("text=Workload")
    page.click("text=per minute")
    chart = page.locator("svg.chart[data-job=cp]")
    chart.wait_for()
    bars = chart.locator("g.bar")
    assert bars.count() == 1
    assert bars.first.get_attribute("data-count") == "3"
    assert bars.first.get_attribute("data-failures") == "0"


SCHEDULE_IS = (
    "(text) => document.querySelector('tr[data-job=compact] .schedule').textContent === text"
)


def test_it_gives_a_system_job_a_schedule_and_takes_it_back(page: Any, live: Live) -> None:
    form = page.locator("tr[data-job=compact] form[data-action=schedule]")
    form.locator("input[name=schedule]").fill("30 4 * * *")
    form.locator("button").click()
    page.wait_for_function(SCHEDULE_IS, arg="30 4 * * *")
    form = page.locator("tr[data-job=compact] form[data-action=schedule]")
    form.locator("input[name=schedule]").fill("")
    form.locator("button").click()
    page.wait_for_function(SCHEDULE_IS, arg="0 3 * * *")


def test_it_defines_a_saved_query_and_uses_the_store_page(
    page: Any, live: Live, tmp_path: Any
) -> None:
    page.click("text=Saved queries")
    page.fill("#query-form input[name=name]", "one")
    page.fill("#query-form textarea[name=body]", "SELECT 1")
    page.fill("#query-form input[name=description]", "the number one")
    page.click("#query-form button[type=submit]")
    page.locator("#flash").get_by_text("one defined").wait_for()
    page.locator("tr[data-query=one]").wait_for()
    # Defined again with the description left blank: it keeps its description.
    page.fill("#query-form input[name=name]", "one")
    page.fill("#query-form textarea[name=body]", "SELECT 2")
    page.click("#query-form button[type=submit]")
    page.locator("tr[data-query=one]").get_by_text("SELECT 2").wait_for()
    assert live.store.query("one").description == "the number one"
    page.click("header >> text=Store")
    page.click("button[data-store=checkpoint]")
    page.locator("#store-result").get_by_text("checkpoint").wait_for()
    page.fill("form[data-store=backup] input[name=directory]", str(tmp_path / "b"))
    page.click("form[data-store=backup] button")
    page.locator("#store-result").get_by_text('"method": "full"').wait_for()


def test_it_restores_from_the_attic_and_previews_a_rollback_on_the_store_page(
    page: Any, live: Live
) -> None:
    live.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    live.store.drop_job("cp", actor="alice")
    page.goto("/store")
    row = page.locator("tr[data-attic-name=cp]")
    row.get_by_text("dropped").wait_for()
    row.locator("button[data-attic=restore]").click()
    page.locator("#confirm[open]").get_by_text("Restore job cp?").wait_for()
    page.click("#confirm button[data-confirm=yes]")
    page.locator("#attic").get_by_text("The attic is empty.").wait_for()
    assert live.store.job("cp").definition["schedule"] == "0 3 * * *"
    page.fill("#rollback-form input[name=version]", "0")
    page.click("#rollback-form button[name=preview]")
    # The preview is a list of what changes, not the API's JSON.
    step = page.locator("#rollback-preview li[data-change=drop]")
    step.wait_for()
    assert step.inner_text() == "job cp dropped: to the attic"
    assert "{" not in page.locator("#rollback-preview").inner_text()
    assert [j.name for j in live.store.jobs()] == ["cp"]  # a preview changes nothing
    page.click("#rollback-form button[name=apply]")  # asks first, like Drop and Stop
    page.locator("#confirm[open]").get_by_text("Roll the catalog back to version 0?").wait_for()
    page.click("#confirm button[data-confirm=no]")
    assert [j.name for j in live.store.jobs()] == ["cp"]  # said no: nothing changed
    page.click("#rollback-form button[name=apply]")
    page.click("#confirm[open] button[data-confirm=yes]")
    page.locator("#flash").get_by_text("Rolled back to version 0: 1 change").wait_for()
    page.locator("tr[data-attic-name=cp]").wait_for()
    assert live.store.jobs() == []
    change = page.locator("#journal tr").first.inner_text()
    assert "rollback catalog catalog" not in change


def test_a_jobs_page_explains_a_time_and_shows_a_bad_one_beside_the_field(
    page: Any, live: Live
) -> None:
    live.store.define_job(name="cp", schedule="0 3 * * *", action="checkpoint")
    page.goto("/jobs/cp")
    page.fill("#explain-at", "2030-03-31T03:00")
    page.click("#explain")
    result = page.locator("#explain-result[data-verdict=upcoming]")
    result.get_by_text("has not come yet").wait_for()
    page.fill("#explain-at", "2030-03-31T03:30")
    page.click("#explain")
    page.locator("#explain-result[data-verdict=not_a_time]").get_by_text("the next is").wait_for()
    page.fill("#explain-at", "soon")
    page.click("#explain")
    page.locator("[data-error-for=at]").get_by_text("not an ISO 8601 time").wait_for()


def test_it_defines_retries_through_the_form_with_a_preset(page: Any, live: Live) -> None:
    page.goto("/jobs/new")
    page.fill("#name", "retried")
    page.check("input[name=action][value=checkpoint]")
    page.fill("#schedule", "0 3 * * *")
    page.fill("#retries", "2")
    page.click("#save")
    page.locator("[data-error-for=retry_backoff_s]").get_by_text("need a first wait").wait_for()
    assert live.store.jobs() == []
    page.select_option("#retry-presets", label="3 retries: 30 s, doubling to 5 min")
    page.click("#save")
    page.wait_for_url("**/jobs")
    definition = live.store.job("retried").definition
    assert (definition["retries"], definition["retry_backoff_s"]) == (3, 30)
    assert definition["retry_backoff_max_s"] == 300
    page.goto("/jobs/retried")
    assert "3, waiting up to 30 s first" in page.locator(".job-retries").inner_text()


def test_it_defines_a_catch_up_and_an_overlap_through_the_form_with_a_preset(
    page: Any, live: Live
) -> None:
    page.goto("/jobs/new")
    page.fill("#name", "steered")
    page.check("input[name=action][value=checkpoint]")
    page.fill("#schedule", "0 3 * * *")
    page.fill("#catchup_window_s", "-60")
    page.click("#save")
    page.locator("[data-error-for=catchup_window_s]").get_by_text("positive number").wait_for()
    assert live.store.jobs() == []
    page.select_option("#catchup-presets", label="every time missed within six hours, in turn")
    page.select_option("#overlap", "buffer_one")
    page.click("#save")
    page.wait_for_url("**/jobs")
    definition = live.store.job("steered").definition
    assert (definition["catchup_window_s"], definition["coalesce"]) == (21600, "all")
    assert definition["overlap"] == "buffer_one"
    page.goto("/jobs/steered")
    assert "coalesce all" in page.locator(".job-catch-up").inner_text()
    assert page.locator(".job-overlap").inner_text() == "buffer_one"


def test_a_jobs_page_cancels_a_run_under_way_after_asking(page: Any, live: Live) -> None:
    endless = (
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) FROM c"
    )
    live.store.define_query("endless", None, endless)
    live.store.define_job(name="forever", schedule="0 3 * * *", action="query", query="endless")
    worker = threading.Thread(target=live.host.run_now, args=("forever",), daemon=True)
    worker.start()
    deadline = time.monotonic() + 10
    while not live.store.runs.page(job="forever"):  # claimed before it starts
        assert time.monotonic() < deadline
        time.sleep(0.02)
    page.goto("/jobs/forever")
    button = page.locator("button[data-action=cancel-run]")
    button.click()
    question = page.locator("#confirm .confirm-question")
    question.get_by_text("Cancel run").wait_for()
    assert "a query's changes are rolled back" in question.inner_text()
    page.click("#confirm [data-confirm=no]")  # asked first: no leaves it running
    assert live.store.runs.page(job="forever")[0].under_way
    button.click()
    page.click("#confirm [data-confirm=yes]")
    page.locator("#job-runs .outcome.cancelled").wait_for()
    worker.join(10)
    (run,) = live.store.runs.page(job="forever")
    assert run.cancelled_by is not None
    assert run.cancelled_by.startswith("user:")


def test_a_run_fetches_its_own_row_alone_and_a_row_on_another_page_nothing(
    page: Any, live: Live
) -> None:
    for name in ("cp", "other", "zz"):
        live.store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
    live.host.sync()
    with live.host.lock:
        shown = len(live.host.scheduler.system_names()) + 2  # the system jobs, cp, other
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    # The first poll is a baseline: the page is fetched once more, whole (live.js).
    page.add_init_script(
        "document.addEventListener('dgxmm:swapped', () => {"
        " window.swaps = (window.swaps || 0) + 1; })"
    )
    page.goto(f"/jobs?limit={shown}")  # zz is on the next page
    page.wait_for_function("window.swaps >= 1")
    page.evaluate("""() => {
        document.getElementById('jobs').kept = true;
        document.querySelector('tr[data-job=other]').kept = true;
    }""")
    fetched.clear()
    live.host.run_now("cp")
    page.locator("tr[data-job=cp] .last").get_by_text("succeeded").wait_for()
    # Not swapped whole: the table, and the row that did not move, are the same elements.
    assert page.evaluate("document.getElementById('jobs').kept") is True, fetched
    assert page.evaluate("document.querySelector('tr[data-job=other]').kept") is True
    pages = [url for url in fetched if "/jobs?" in url]
    assert pages, fetched
    assert all("row=cp" in url and "row=other" not in url for url in pages), pages
    fetched.clear()

    def names_zz(response: Any) -> bool:
        return "/api/changes" in response.url and '"zz"' in response.text()

    with page.expect_response(names_zz):
        live.host.run_now("zz")
    page.wait_for_timeout(300)  # room for a fetch, were one to follow the poll
    assert [url for url in fetched if "/jobs?" in url] == []


def test_a_change_held_back_while_someone_types_shows_once_they_stop(page: Any, live: Live) -> None:
    page.add_init_script(
        "document.addEventListener('dgxmm:swapped', () => {"
        " window.swaps = (window.swaps || 0) + 1; })"
    )
    page.goto("/jobs")
    page.wait_for_function("window.swaps >= 1")  # the baseline
    field = page.locator("tr[data-kind=system] form[data-action=schedule] input").first
    field.click()
    field.type("*/5")
    live.store.define_job(name="fresh", schedule="0 3 * * *", action="checkpoint")
    page.wait_for_function("window.swaps >= 2")  # the poll that saw it, held back
    assert page.locator("tr[data-job=fresh]").count() == 0
    assert field.input_value() == "*/5"  # what was typed is not swept away
    field.fill("")
    page.locator("h1").click()  # done typing; no change follows
    page.locator("tr[data-job=fresh]").wait_for()
