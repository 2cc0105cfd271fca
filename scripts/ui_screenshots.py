"""Screenshots of the memory browser's pages (memdb ui) on the demo data, for the README.

    python scripts/ui_screenshots.py [--dsn URL] [--admin-dsn URL] [--out DIR]

Stores ``memdb demo``'s memories (memdb/demo.py; nothing new when already there), links them
into the entity graph, recalls the demo's queries, creates an API key of tenant ``demo``
(revoked at the end), serves the HTTP door with the pages on a free loopback port and drives
headless Chromium (Debian's ``chromium`` and ``chromium-driver``, through selenium) through
each page, writing DIR/ui-<page>.png (default DIR: docs/images). Without --dsn: $MEMDB_DSN,
else the embedded server.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
GRAPH = ["Alice works with Priya on the churn model.",
         "Priya works with Jonas on the climate dashboard."]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn")
    ap.add_argument("--admin-dsn")
    ap.add_argument("--out", default="docs/images")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists() or not Path(DRIVER).exists():
        print(f"needs {CHROMIUM} and {DRIVER} (apt-get install chromium chromium-driver)",
              file=sys.stderr)
        return 1
    import uvicorn
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from memdb import MemoryAdmin, MemoryStore
    from memdb import demo as demo_data
    from memdb.families.keys import create_key, revoke_key
    from memdb.http import ServerSettings, create_app

    with MemoryStore(args.dsn, tenant="demo") as store:
        demo_data.run(store)
        for text in GRAPH:  # relations the heuristic extractor finds (the demo's have none)
            store.add(text, subject="alice", source_id="ui-screenshots")
        store.graph.link()
        for s in demo_data.SEARCHES:
            store.recall(s["query"], k=s["k"], **s["filter"])
        first = store.list(limit=1)[0]
    with MemoryAdmin(args.admin_dsn) as admin:
        made = create_key(admin, tenant="demo", name="ui screenshots")
    settings = ServerSettings(dsn=args.dsn, admin_dsn=args.admin_dsn, ui=True)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                "--window-size=1200,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        driver.get(url + "/ui/login")
        driver.find_element(By.NAME, "key").send_keys(made.key)
        driver.find_element(By.CSS_SELECTOR, "form button").click()
        time.sleep(0.5)
        pages = {"subjects": "/ui/", "profile": "/ui/subjects/alice",
                 "memories": "/ui/memories",
                 "search": "/ui/search?q=" + quote("what does Alice drink?"),
                 "memory": f"/ui/memories/{first.id}", "review": "/ui/review",
                 "maintenance": "/ui/maintenance",
                 "graph": "/ui/graph?entity=Alice&hops=2"}
        for name, path in pages.items():
            t0 = time.perf_counter()
            driver.get(url + path)
            ms = (time.perf_counter() - t0) * 1000
            png = out / f"ui-{name}.png"
            png.write_bytes(driver.get_screenshot_as_png())
            print(f"{png} ({ms:.0f} ms)")
    finally:
        driver.quit()
        server.should_exit = True
        thread.join(30)
        with MemoryAdmin(args.admin_dsn) as admin:
            revoke_key(admin, made.info.key_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
