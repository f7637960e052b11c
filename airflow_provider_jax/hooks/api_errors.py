"""What a Kubernetes API error means, from either client: its status, a short account (naming
a missing RBAC permission plainly), whether another try may help, and the retry policy for
our calls (the cncf provider's attempts and wait bounds, with ``retry.py``'s one backoff).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import re
from collections.abc import Callable
from typing import Any, TypeVar, cast

import tenacity
from aiohttp import ClientPayloadError
from airflow.providers.cncf.kubernetes.kubernetes_helper_functions import (
    API_RETRIES,
    API_RETRY_WAIT_MAX,
    API_RETRY_WAIT_MIN,
    TRANSIENT_CONNECTION_ERRORS,
    TRANSIENT_STATUS_CODES,
)
from kubernetes.client.rest import ApiException
from kubernetes_asyncio.client.exceptions import ApiException as AsyncApiException

from airflow_provider_jax.hooks.retry import ExponentialJitter

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


def api_status(exc: BaseException) -> int | None:
    """The HTTP status of a Kubernetes API error from either client, else None."""
    return exc.status if isinstance(exc, ApiException | AsyncApiException) else None


def explain(exc: BaseException) -> str:
    """A short account of an API error (the clients' own ``repr`` is empty)."""
    status = api_status(exc)
    if status is None:
        return repr(exc)
    body = getattr(exc, "body", None)
    try:
        message = json.loads(body).get("message") if body else None
    except (TypeError, ValueError, AttributeError):
        message = None
    account = f"HTTP {status} {getattr(exc, 'reason', '') or ''}: {message or ''}".strip(" :")
    if status == 403 and message and (lacks := missing_permission(message)):
        return f"{lacks} (see the Role in docs/kubernetes.md). {account}"
    return account


_FORBIDDEN = re.compile(
    r'cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]+)")?'
)


def missing_permission(message: str) -> str | None:
    """The permission an API server's 403 message names, said plainly, or None."""
    match = _FORBIDDEN.search(message)
    if match is None:
        return None
    resource, group = match["resource"], match["group"]
    if group:
        base, _, sub = resource.partition("/")
        resource = f"{base}.{group}" + (f"/{sub}" if sub else "")
    where = f"in namespace {match['namespace']}" if match["namespace"] else "cluster-wide"
    return f"the identity lacks `{match['verb']}` on `{resource}` {where}"


def is_transient(exc: BaseException) -> bool:
    """429, 5xx and lost connections: worth another try. 409 is not (the cncf helper's set
    includes it for updates; for create it means "exists", for deletes "not that object").
    A connection cut mid-reply (an API server restart under a watch) is lost too."""
    status = api_status(exc)
    if status is not None:
        return status in TRANSIENT_STATUS_CODES and status != 409
    return isinstance(
        exc, (*TRANSIENT_CONNECTION_ERRORS, ClientPayloadError, TimeoutError, ConnectionError)
    )


def api_retry() -> Callable[[F], F]:
    """For one API call: the cncf provider's attempts (``[workers] api_retries``) and wait
    bounds (``api_retry_wait_min``/``max``), with the one backoff every caller uses.

    A coroutine's first try runs outside tenacity, which builds its retry state and rewraps
    its callbacks on every call, far more work than the call itself, for calls
    that nearly always succeed, a few per job end. Only a transient failure enters it, for the
    tries left, with the waits they would have had."""
    wait = ExponentialJitter(API_RETRY_WAIT_MIN, API_RETRY_WAIT_MAX)
    retry_args: dict[str, Any] = {
        "retry": tenacity.retry_if_exception(is_transient),
        "reraise": True,
        "before_sleep": tenacity.before_sleep_log(log, logging.WARNING),
    }
    whole = tenacity.retry(stop=tenacity.stop_after_attempt(API_RETRIES), wait=wait, **retry_args)
    # After the first failure: try k of these is try k + 1 of the whole, so it waits twice as
    # long as try k would (ExponentialJitter doubles per try).
    rest = tenacity.retry(
        stop=tenacity.stop_after_attempt(API_RETRIES - 1),
        wait=ExponentialJitter(2 * API_RETRY_WAIT_MIN, API_RETRY_WAIT_MAX),
        **retry_args,
    )

    def decorate(fn: F) -> F:
        if not inspect.iscoroutinefunction(fn) or API_RETRIES < 2:
            return whole(fn)
        retried = rest(fn)

        @functools.wraps(fn)
        async def first_then_retried(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except Exception as err:
                if not is_transient(err):
                    raise
                delay = wait.delay(1, err)
                log.warning(
                    "Retrying %s in %.2f seconds as it raised %r", fn.__qualname__, delay, err
                )
            await asyncio.sleep(delay)
            return await retried(*args, **kwargs)

        return cast(F, first_then_retried)

    return decorate
