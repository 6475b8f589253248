"""What /metrics labels a request and a delivery with: route templates, never raw paths;
SMTP response classes from the outcome."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.types import Scope

from mailbridge.api.app import create_app
from mailbridge.api.metrics import UNMATCHED, route_template
from mailbridge.config import Settings
from mailbridge.mail.providers.base import (
    Accepted,
    Outcome,
    PermanentFailure,
    TemporaryFailure,
    Unconfirmed,
)
from mailbridge.services.operations._metrics import outcome_labels


def http(method: str, path: str) -> Scope:
    return {"type": "http", "method": method, "path": path, "root_path": ""}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    return create_app(Settings(data_dir=tmp_path_factory.mktemp("var")))


@pytest.mark.parametrize(
    ("method", "path", "template"),
    [
        ("POST", "/emails", "/emails"),  # answered before routing by the send shortcut
        ("GET", "/emails/01a2-77", "/emails/{email_id}"),  # PATCH's route comes first
        ("POST", "/emails/01a2-77/cancel", "/emails/{email_id}/cancel"),
        ("GET", "/emails/receiving", "/emails/receiving"),
        ("DELETE", "/health", "/health"),  # known path, wrong method: still the route
        ("GET", "/dashboard/static/htmx.min.js", "/dashboard/static/{path}"),
        ("GET", "/no/such/thing", UNMATCHED),
    ],
)
def test_unrouted_requests_are_labelled_by_the_route_they_would_reach(
    app: FastAPI, method: str, path: str, template: str
) -> None:
    assert route_template(app.router.routes, http(method, path)) == template


def test_a_routed_request_is_labelled_by_the_route_it_reached() -> None:
    inner = FastAPI()

    @inner.get("/items/{item_id}")
    async def item(item_id: str) -> str:
        return item_id

    [route] = [r for r in inner.router.routes if getattr(r, "path", "") == "/items/{item_id}"]
    scope = {**http("GET", "/shop/items/7"), "route": route, "root_path": "/shop"}
    assert route_template([], {**scope, "mailbridge.app_root_path": ""}) == "/shop/items/{item_id}"
    mount = FastAPI()
    mount.mount("/files", StaticFiles(directory="."), name="files")
    [files] = mount.router.routes[-1:]
    assert route_template([], {**http("GET", "/files/a"), "route": files}) == "/files/{path}"


@pytest.mark.parametrize(
    ("outcome", "labels"),
    [
        (Accepted(reply="250 ok"), ("delivered", "2xx")),
        (TemporaryFailure("RCPT TO deferred: a@b.io: 451 later"), ("deferred", "4xx")),
        (TemporaryFailure("cannot reach the relay: refused"), ("deferred", "transport_error")),
        (Unconfirmed("no answer to the end of data"), ("unconfirmed", "transport_error")),
        (PermanentFailure("RCPT TO refused: a@b.io: 550 no", ("a@b.io",)), ("bounced", "5xx")),
        (PermanentFailure("DATA refused: 554 spam"), ("failed", "5xx")),
        (PermanentFailure("the attachments exceed 40 MB in total"), ("failed", None)),
    ],
)
def test_delivery_outcomes_and_their_smtp_classes(
    outcome: Outcome, labels: tuple[str, str | None]
) -> None:
    assert outcome_labels(outcome) == labels
