"""docker/entrypoint.sh, the memdb container's start (docker-compose.yml's `memdb` service), run
for real against the test server: it migrates as the admin login, creates the application login
confined to memdb_app, is idempotent, and refuses an application login that would bypass
row-level security. (Docker itself does not run here; the script is what the image runs.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docker" / "entrypoint.sh"

CHECK = """
import psycopg, os
from memdb import MemoryStore
with MemoryStore(tenant="acme", gate=None) as store:
    store.add(os.environ["NOTE"], subject="ops")
    print("count", store.count())
    with store.db.transaction() as conn:
        print("user", conn.execute("SELECT current_user AS u").fetchone()["u"])
"""


def _login(dsn: str, user: str) -> str:
    params = conninfo_to_dict(dsn)
    params["user"], params["password"] = user, "s3cret-pw"
    return make_conninfo(**params)


def _run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["sh", str(SCRIPT), *command], env=full, capture_output=True,
                          text=True, timeout=300, check=False)


def test_the_entrypoint_migrates_and_confines_the_server_login(empty_db):
    login = f"memdb_srv_{os.getpid()}"
    env = {"MEMDB_ADMIN_DSN": empty_db, "MEMDB_DSN": _login(empty_db, login)}
    first = _run({**env, "NOTE": "容器里的记忆"}, sys.executable, "-c", CHECK)
    assert first.returncode == 0, first.stderr
    assert "count 1" in first.stdout and f"user {login}" in first.stdout
    assert "s3cret-pw" not in first.stdout + first.stderr
    with psycopg.connect(empty_db) as conn:
        role = conn.execute("SELECT rolsuper, rolbypassrls, rolcreaterole, "
                            "pg_has_role(rolname, 'memdb_app', 'member') FROM pg_roles "
                            "WHERE rolname = %s", [login]).fetchone()
    assert role == (False, False, False, True)
    again = _run({**env, "NOTE": "a memory written after a restart"},  # each start runs it
                 sys.executable, "-c", CHECK)
    assert again.returncode == 0, again.stderr
    assert "count 2" in again.stdout


def test_the_entrypoint_refuses_a_privileged_server_login(empty_db):
    env = {"MEMDB_ADMIN_DSN": empty_db, "MEMDB_DSN": empty_db}  # the superuser itself
    result = _run(env, "true")
    assert result.returncode != 0
    assert "superuser or bypasses row-level security" in result.stderr


def test_the_entrypoint_needs_both_logins(empty_db):
    result = _run({"MEMDB_ADMIN_DSN": "", "MEMDB_DSN": empty_db}, "true")
    assert result.returncode != 0 and "MEMDB_ADMIN_DSN" in result.stderr


def test_the_compose_citus_profile_is_a_coordinator_and_two_workers():
    """docker-compose.yml's `citus` profile, read as data (Docker does not run here; CI tests
    memdb on a cluster built from the Citus source instead): three nodes of the image in
    docker/citus (pgvector's image plus Citus) that load citus at start, only the coordinator
    published, and a one-shot service that adds both workers to it."""
    import yaml

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    services = compose["services"]
    citus = {name for name, svc in services.items() if "citus" in svc.get("profiles", [])}
    assert citus == {"citus-coordinator", "citus-worker1", "citus-worker2", "citus-setup"}
    assert "profiles" not in services["postgres"] and "profiles" not in services["memdb"]
    nodes = ["citus-coordinator", "citus-worker1", "citus-worker2"]
    subnet = compose["networks"]["citus-internal"]["ipam"]["config"][0]["subnet"]
    assert compose["networks"]["citus-internal"]["internal"] is True
    for name in nodes:
        node = services[name]
        assert node["build"] == "docker/citus"
        command = " ".join(node["command"])
        assert "shared_preload_libraries=citus" in command and "wal_level=logical" in command
        assert node["environment"]["CITUS_INTERNAL_SUBNET"] == subnet
        assert "citus-internal" in node["networks"]
        assert "-h 127.0.0.1" in node["healthcheck"]["test"][1]
        assert len(node["volumes"]) == 1
    assert len({services[n]["volumes"][0] for n in nodes}) == 3  # a data volume each
    assert services["citus-coordinator"]["ports"] == ["127.0.0.1:55433:5432"]
    assert "ports" not in services["citus-worker1"] and "ports" not in services["citus-worker2"]
    setup = services["citus-setup"]
    assert set(setup["depends_on"]) == set(nodes)
    assert all(d["condition"] == "service_healthy" for d in setup["depends_on"].values())
    sql = " ".join(setup["entrypoint"])
    assert "citus_set_coordinator_host('citus-coordinator-internal', 5432)" in sql
    assert all(f"citus_add_node('{w}', 5432)" in sql for w in nodes[1:])
    assert "citus-coordinator-internal" in \
        services["citus-coordinator"]["networks"]["citus-internal"]["aliases"]
    dockerfile = (ROOT / "docker" / "citus" / "Dockerfile").read_text(encoding="utf-8")
    assert "pgvector/pgvector:pg18" in dockerfile and "postgresql-18-citus-" in dockerfile
    init = (ROOT / "docker" / "citus" / "10-citus.sh").read_text(encoding="utf-8")
    assert "COPY 10-citus.sh /docker-entrypoint-initdb.d/" in dockerfile
    assert "CREATE EXTENSION IF NOT EXISTS citus" in init and "CITUS_INTERNAL_SUBNET" in init
    assert subprocess.run(["sh", "-n", str(ROOT / "docker" / "citus" / "10-citus.sh")]
                          ).returncode == 0
