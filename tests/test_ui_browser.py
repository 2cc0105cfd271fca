"""The memory browser (memdb.ui) driven by headless Chromium (Debian's chromium and
chromium-driver, through selenium): log in, search, open a memory, approve a review item, a
cross-tenant URL; each step's screenshot is checked (not blank) and its text read from the DOM.
Skipped, with the reason, where /usr/bin/chromium or /usr/bin/chromedriver is absent."""

from __future__ import annotations

import os
import struct
import zlib

import pytest

from tests.http_server import make_keys, served_door
from tests.test_ui import EN, RULE, XSS, ZH, _propose

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"

pytest.importorskip("fastapi")
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip(f"browser tests need {CHROMIUM} and {DRIVER} (apt-get install chromium "
                "chromium-driver)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in memdb[dev]")
from selenium.webdriver.common.by import By  # noqa: E402

B_SECRET = "Globex keeps the launch codes in the blue binder"


def pixels(png: bytes) -> bytes:
    """The decompressed image data of a PNG (its IDAT chunks)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data = 8, b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            data += png[pos + 8:pos + 8 + length]
        pos += 12 + length
    return zlib.decompress(data)


def check_screenshot(driver, folder, name: str) -> None:
    png = driver.get_screenshot_as_png()
    (folder / f"{name}.png").write_bytes(png)
    raw = pixels(png)
    # not blank: a white (or any one-colour) page has a handful of distinct byte values
    assert len(set(raw[::3])) > 16, f"screenshot {name} looks blank"


@pytest.fixture(scope="module")
def keys(module_db, embedder):
    return make_keys(module_db, embedder)


@pytest.fixture(scope="module")
def door(module_db, embedder, keys):
    with served_door(module_db, embedder, ui=True) as running:
        yield running


@pytest.fixture(scope="module")
def data(door, keys, module_db):
    ids = {}
    with door.client(keys["acme"]) as a:
        for name, content in (("zh", ZH), ("en", EN), ("xss", XSS)):
            r = a.post("/v1/memories", json={"content": content, "subject": "alice",
                                             "source_id": "t1", "category": "preferences"})
            assert r.status_code == 201, r.text
            ids[name] = r.json()["id"]
    with door.client(keys["globex"]) as b:
        r = b.post("/v1/memories", json={"content": B_SECRET, "subject": "bob",
                                         "source_id": "t1"})
        assert r.status_code == 201, r.text
        ids["globex"] = r.json()["id"]
    ids["review"] = _propose(module_db, "acme", "alice", RULE)
    return ids


@pytest.fixture(scope="module")
def driver():
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900", "--lang=en-US"):
        options.add_argument(arg)
    d = webdriver.Chrome(service=Service(DRIVER), options=options)
    d.set_page_load_timeout(60)
    try:
        yield d
    finally:
        d.quit()


def body(driver) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


def _replaced(page) -> bool:
    """Whether the page's <html> element is gone. Mid-navigation chromedriver may answer with
    "Node with given id does not belong to the document" instead of a stale-element error: the
    same news."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    try:
        page.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as e:
        if "does not belong to the document" in str(e):
            return True
        raise
    return False


def click(driver, element) -> None:
    """Click, then wait until the next page has replaced this one (the URL may not change)."""
    from selenium.webdriver.support.ui import WebDriverWait

    page = driver.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(driver, 60).until(lambda _: _replaced(page))
    WebDriverWait(driver, 60).until(
        lambda d: d.execute_script("return document.readyState") == "complete")


def test_browse_log_in_search_open_approve(door, keys, data, driver, tmp_path):
    shots = tmp_path
    driver.get(door.url + "/ui/")  # not logged in: the login form
    assert "Log in" in driver.title
    check_screenshot(driver, shots, "login")
    driver.find_element(By.NAME, "key").send_keys(keys["acme"])
    click(driver, driver.find_element(By.CSS_SELECTOR, "form button"))
    assert driver.current_url == door.url + "/ui/"
    assert "alice" in body(driver) and "preferences" in body(driver)
    assert keys["acme"] not in driver.current_url
    check_screenshot(driver, shots, "subjects")

    driver.get(door.url + "/ui/memories")
    assert ZH in body(driver) and EN in body(driver)
    assert "<script>alert(1)</script>" in body(driver)  # shown as text, not run
    assert driver.execute_script("return document.querySelectorAll('main script').length") == 0
    check_screenshot(driver, shots, "memories")

    driver.get(door.url + "/ui/search")
    box = driver.find_element(By.NAME, "q")
    box.send_keys("乌龙茶")
    click(driver, driver.find_element(By.CSS_SELECTOR, "main form button"))
    assert "fused" in body(driver) and "vector rank" in body(driver) and ZH in body(driver)
    check_screenshot(driver, shots, "search")
    click(driver, driver.find_element(By.LINK_TEXT, ZH))
    assert "/ui/memories/" in driver.current_url and "History" in body(driver)
    assert driver.find_element(By.CSS_SELECTOR, "main p span[lang=zh]").text == ZH
    check_screenshot(driver, shots, "memory")

    driver.get(door.url + "/ui/review")
    assert RULE in body(driver)
    check_screenshot(driver, shots, "review")
    click(driver, driver.find_element(
        By.CSS_SELECTOR, f"form[action='/ui/review/{data['review']}/approve'] button"))
    assert driver.current_url == door.url + "/ui/review"
    assert RULE not in body(driver)
    driver.get(door.url + "/ui/review?status=approved")
    assert RULE in body(driver)

    driver.get(door.url + f"/ui/memories/{data['globex']}")  # another tenant's memory
    assert driver.title.startswith("Not found") and B_SECRET not in body(driver)
    check_screenshot(driver, shots, "cross_tenant")

    click(driver, driver.find_element(By.LINK_TEXT, "Back to the memory browser"))
    click(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/ui/logout'] button"))
    assert "Log in" in driver.title
    driver.get(door.url + "/ui/memories")
    assert "Log in" in driver.title and ZH not in body(driver)


def test_screenshot_script_draws_every_page(fresh_db, tmp_path):
    """scripts/ui_screenshots.py on a fresh database: the demo data, a key (revoked after),
    a screenshot of each page, none blank."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "ui_screenshots.py"
    res = subprocess.run([sys.executable, str(script), "--dsn", fresh_db, "--admin-dsn",
                          fresh_db, "--out", str(tmp_path)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert res.returncode == 0, res.stderr
    shots = sorted(p.name for p in tmp_path.glob("ui-*.png"))
    assert shots == sorted(f"ui-{n}.png" for n in ("subjects", "profile", "memories", "search",
                                                   "memory", "review", "maintenance",
                                                   "graph"))
    for name in shots:
        assert len(set(pixels((tmp_path / name).read_bytes())[::3])) > 16, name
    import psycopg

    with psycopg.connect(fresh_db) as conn:  # the script's key is revoked
        assert conn.execute("SELECT count(*) FROM memdb.api_keys WHERE revoked_at IS NULL"
                            ).fetchone()[0] == 0


def test_swagger_ui_renders_offline_in_the_browser(door, driver):
    """/docs in headless Chromium: Swagger UI renders the OpenAPI document (title, the search
    route, the Authorize button of the bearer scheme) and every resource the page loaded came
    from this server, none from a CDN (this machine reaches none: a blank page otherwise)."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(door.url + "/docs")
    WebDriverWait(driver, 60).until(
        lambda d: "/v1/search" in d.find_element(By.TAG_NAME, "body").text)
    text = body(driver)
    assert "memdb" in text and "Authorize" in text
    loaded = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert loaded and all(url.startswith(door.url) for url in loaded), loaded
    assert any(url.endswith("/openapi.json") for url in loaded)
