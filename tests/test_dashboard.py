"""`argus dashboard` in a real headless browser (Debian's chromium, driven by Selenium
through the system chromedriver): the network drawn from the catalog, a click on a node
shows its definition and cycles, a click on a query its answer, the waiting and
quarantined rows counted. ARGUS_DASHBOARD_SCREENSHOT=path saves a picture of the page."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import threading

import pytest

pytest.importorskip("flask", reason="the dashboard extra is not installed")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def served(db):
    """The page as `argus dashboard` serves it (waitress)."""
    waitress = pytest.importorskip("waitress.server", reason="waitress is not installed")

    from argus.dashboard import create_app

    server = waitress.create_server(create_app(db.dsn), host="127.0.0.1", port=0, threads=2)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.effective_port}/"
    server.close()


@pytest.fixture
def browser():
    from selenium.webdriver.chrome.service import Service

    if not (CHROMIUM and DRIVER):
        pytest.skip("no headless browser here (Debian: apt-get install chromium "
                    "chromium-driver)")

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1280,1600"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def test_the_dashboard_draws_the_network_and_answers_clicks(db, served, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    db.create_stream("transfers", {"id": "bigint", "sender": "text", "amount": "int",
                                   "t": "timestamptz"}, time_column="t")
    db.create_stream("accounts", {"name": "text", "city": "text"})
    for name, where in (("big", "amount > 100"), ("huge", "amount > 1000")):
        db.register_query(name, "SELECT a.city, count(*) AS n FROM transfers x JOIN accounts a "
                                f"ON a.name = x.sender WHERE x.{where} GROUP BY a.city")
    now = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)
    db.insert("accounts", [("ann", "<Paris>"), ("bob", "Oslo")])
    db.insert("transfers", [(1, "ann", 500, now), (2, "bob", 5000, now), (3, "ann", 2000, now)])
    db.run()
    db.insert("transfers", [(4, "bob", 900, now + dt.timedelta(days=3650))])  # held back
    db.run()
    db.insert("transfers", [(5, "ann", 300, now)])  # waiting for the next cycle
    nodes = {node_id: kind for node_id, kind in db.conn.execute(
        "SELECT node_id, kind FROM argus_catalog.nodes")}

    browser.get(served)
    drawn = {int(g.get_attribute("data-node")): g.get_attribute("data-kind")
             for g in browser.find_elements(By.CSS_SELECTOR, ".network g.node")}
    assert drawn == nodes
    assert browser.find_elements(By.CSS_SELECTOR, "svg.cycles rect.bar")
    labels = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "svg.cycles text")]
    assert "5" in labels and f"argus: {db.conn.info.dbname}" in browser.title + \
        browser.find_element(By.TAG_NAME, "h1").text
    shared = next(n for n, kind in nodes.items() if kind == "join")
    browser.find_element(By.CSS_SELECTOR, f'.network g.node[data-node="{shared}"]').click()
    panel = browser.find_element(By.ID, "panel")
    WebDriverWait(browser, 10).until(lambda _: f"node {shared}: join" in panel.text)
    assert "used by: big, huge" in panel.text and "last cycles:" in panel.text
    assert "INSERT INTO" in panel.text  # its code
    assert "  join_type: inner" in panel.text and "\\\"" not in panel.text  # fields, not JSON
    browser.find_element(By.CSS_SELECTOR, 'a.query[data-query="big"]').click()
    answer = browser.find_element(By.ID, "answer")
    WebDriverWait(browser, 10).until(lambda _: "answer" in answer.text)
    cells = [c.text for c in answer.find_elements(By.CSS_SELECTOR, "table:first-of-type td")]
    assert cells[:4] == ["<Paris>", "2", "Oslo", "1"] or cells[:4] == ["Oslo", "1", "<Paris>", "2"]
    streams = {row.find_elements(By.TAG_NAME, "td")[0].text:
               [td.text for td in row.find_elements(By.TAG_NAME, "td")[1:]]
               for row in browser.find_elements(By.CSS_SELECTOR, "#streams tr")[1:]}
    assert streams["transfers"] == ["3", "1", "1"]  # history, waiting, quarantined
    if os.environ.get("ARGUS_DASHBOARD_SCREENSHOT"):
        browser.save_screenshot(os.environ["ARGUS_DASHBOARD_SCREENSHOT"])


def test_answers_that_cannot_be_shown_as_they_are_still_read(db):
    """What JSON and a browser cannot take: NaN, infinity, bytea, jsonb, long text, an
    output expression failing on a row, a name no query can have."""
    from argus.dashboard import create_app

    db.create_stream("t", {"id": "int", "f": "float8", "d": "date", "j": "jsonb",
                           "b": "bytea", "s": "text"})
    db.register_query("odd", "SELECT id, f, d, j, b, s FROM t")
    db.register_query("ratio", "SELECT 10 / (id - 7) AS x FROM t")
    db.insert("t", [(1, float("nan"), "infinity", '{"a": null}', b"\x00", "x" * 5000),
                    (7, float("inf"), None, None, None, None)])
    db.run()
    client = create_app(db.dsn).test_client()
    odd = client.get("/query/odd").get_json()  # (strict JSON: no bare NaN)
    rows = {r[0]: r for r in odd["answer"]["rows"]}
    assert rows["1"][1:5] == ["NaN", "infinity", '{"a": null}', "\\x00"]
    assert len(rows["1"][5]) < 600 and rows["7"][1] == "Infinity"
    ratio = client.get("/query/ratio").get_json()  # the cycle isolated it
    assert ratio["status"] == "failed" and "division by zero" in ratio["error"]
    for name in ("%3Cscript%3E", "%00", "x" * 80, "nope"):
        assert client.get(f"/query/{name}").status_code == 404
    assert client.get("/").status_code == 200


def test_a_role_that_may_not_read_the_catalog_is_told_at_once(db, login):
    from argus.dashboard import create_app
    from argus.errors import PermissionDeniedError

    db.create_stream("s", {"id": "int"})
    db.register_query("a", "SELECT id FROM s")
    role, dsn = login("reader")
    db.grant("reader", role, query="a")  # its answer, not the network
    with pytest.raises(PermissionDeniedError, match=f"role '{role}' may not read argus's"):
        create_app(dsn)


def test_after_a_crash_the_page_says_answers_wait_for_the_rebuild(db):
    from argus.dashboard import create_app

    from .test_durability import crash

    db.create_stream("t", {"id": "int"})
    db.register_query("n", "SELECT count(*) AS n FROM t")
    db.insert("t", [(1,), (2,)])
    db.run()
    client = create_app(db.dsn).test_client()
    page = client.get("/").get_data(as_text=True)
    assert f"argus: {db.conn.info.dbname}" in page and "A crash emptied" not in page
    crash(db.conn)
    page = client.get("/")
    assert page.status_code == 200 and "A crash emptied" in page.get_data(as_text=True)
    answer = client.get("/query/n").get_json()  # the view refuses, and says why
    assert answer["answer"]["rows"] == [] and "rebuilt after a crash" in answer["answer"]["error"]
