"""A report of the demo data and its screenshot, for the README.

    python scripts/report_screenshot.py [--dsn URL] [--out DIR] [--png FILE]

Stores ``memdb demo``'s memories (memdb/demo.py; nothing new when already there), recalls its
queries (so the report has traces), writes the report into DIR (default
``memdb-report-demo``) and, when ``chromium`` is installed, a headless screenshot of its first
screen to FILE (default ``docs/images/report.png``). Without --dsn: $MEMDB_DSN, else the
embedded server.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from memdb import MemoryStore
from memdb import demo as demo_data
from memdb.report import write_report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn")
    ap.add_argument("--out", default="memdb-report-demo")
    ap.add_argument("--png", default="docs/images/report.png")
    ap.add_argument("--height", type=int, default=1600, help="screenshot height in pixels")
    args = ap.parse_args()
    with MemoryStore(args.dsn) as store:
        demo_data.run(store)
        for s in demo_data.SEARCHES:
            store.recall(s["query"], k=s["k"], **s["filter"])
        result = write_report(store, args.out)
    print(f"{result.html} ({result.seconds:.2f} s)")
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed: no screenshot", file=sys.stderr)
        return 0
    png = Path(args.png)
    png.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size=1100,{args.height}", f"--screenshot={png.resolve()}",
                    result.html.resolve().as_uri()], check=True, capture_output=True, timeout=120)
    print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
