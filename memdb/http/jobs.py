"""``GET /v1/jobs`` and ``GET /v1/jobs/{job_id}``: the API key's tenant's jobs (store.jobs;
docs/jobs.md). The router is made by :func:`router` from the app's own dependency (the
tenant's store, from the API key), so this module needs nothing else of the app."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from ..families.jobs.family import MAX_LIST

__all__ = ["router"]

State = Literal["queued", "running", "done", "failed", "dead", "cancelled"]


def router(tenant_store: Any, responses: dict[Any, Any]) -> APIRouter:
    """The jobs routes; ``tenant_store``: the dependency yielding the key's tenant's store."""
    store_of = Depends(tenant_store)  # a default: the annotations here are strings
    jobs = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=responses)

    @jobs.get("")
    async def list_jobs(state: State | None = None, kind: str | None = None,
                        limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 50,
                        store: Any = store_of) -> Any:
        """The tenant's jobs, newest first (state, attempts, last error, result)."""
        found = await store.jobs.list(state=state, kind=kind, limit=limit)
        return {"items": [j.to_json() for j in found]}

    @jobs.get("/{job_id}")
    async def get_job(job_id: str, store: Any = store_of) -> Any:
        """One job of the tenant: queued, running, done, failed (retried after a backoff),
        dead (last_error says why) or cancelled; result when done."""
        return (await store.jobs.get(job_id)).to_json()

    return jobs
