"""``memdb keys create|list|revoke``: API keys of the HTTP door (:mod:`memdb.families.keys`), kept
by the
admin login (--dsn, else $MEMDB_ADMIN_DSN, else $MEMDB_DSN, else the embedded superuser)."""

from __future__ import annotations

import click

from ..families.admin import MemoryAdmin
from ..families.keys import create_key, list_keys, revoke_key
from ._app import State, cli, emit_json, json_option
from ._format import table


def _admin(state: State) -> MemoryAdmin:
    return MemoryAdmin(None if state.dsn_from_env else state.dsn)


@cli.group()
def keys() -> None:
    """API keys of `memdb serve`: each bound to a tenant (and optionally a subject), or an
    admin key. Stored hashed; a key is printed once, when created."""


@keys.command("create")
@click.option("--tenant", help="The tenant the key opens (required unless --admin).")
@click.option("--subject", help="Confine the key to this subject's memories.")
@click.option("--name", help="A label (who or what holds the key).")
@click.option("--admin", "is_admin", is_flag=True,
              help="An admin key: the all-tenant operations (maintenance), no tenant.")
@json_option
@click.pass_obj
def keys_create(state: State, tenant: str | None, subject: str | None, name: str | None,
                is_admin: bool, as_json: bool) -> None:
    """Create a key and print it (once: only its hash is kept). The first line of the text
    output is the key."""
    with _admin(state) as admin:
        created = create_key(admin, tenant=tenant, subject=subject, name=name,
                             is_admin=is_admin)
    if as_json:
        emit_json({"key": created.key, **created.info.to_dict()})
        return
    click.echo(created.key)
    info = created.info
    scope = "admin" if info.is_admin else f"tenant {info.tenant}" + (
        f", subject {info.subject}" if info.subject else "")
    click.echo(f"created key {info.key_id} ({scope}); it is shown only now: store it safely",
               err=True)


@keys.command("list")
@click.option("--tenant", help="Only this tenant's keys.")
@click.option("--active", is_flag=True, help="Leave out revoked keys.")
@json_option
@click.pass_obj
def keys_list(state: State, tenant: str | None, active: bool, as_json: bool) -> None:
    """The keys: id, prefix, name, tenant/subject, created, revoked, last used (never a
    secret)."""
    with _admin(state) as admin:
        found = list_keys(admin, tenant=tenant, include_revoked=not active)
    if as_json:
        emit_json([k.to_dict() for k in found])
        return

    def when(t: object) -> str:
        return t.strftime("%Y-%m-%d %H:%M") if t else "-"  # type: ignore[attr-defined]

    table(["id", "prefix", "tenant", "subject", "created", "revoked", "last used", "name"],
          [[str(k.id), k.prefix, "(admin)" if k.is_admin else k.tenant or "-",
            k.subject or "-", when(k.created_at), when(k.revoked_at), when(k.last_used_at),
            k.name or "-"] for k in found])


@keys.command("revoke")
@click.argument("ref")
@json_option
@click.pass_obj
def keys_revoke(state: State, ref: str, as_json: bool) -> None:
    """Revoke a key by its key id, prefix (mdb_<id>_) or numeric id: it stops working at
    once."""
    with _admin(state) as admin:
        info = revoke_key(admin, ref)
    if as_json:
        emit_json(info.to_dict())
    else:
        click.echo(f"revoked key {info.key_id} ({info.name or 'no name'})")
