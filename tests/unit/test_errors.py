"""Every name of spec §7 has its class, with the spec's status."""

from __future__ import annotations

import inspect

import pytest

from mailbridge import errors

SPEC_TABLE = {
    "invalid_idempotency_key": 400,
    "missing_api_key": 401,
    "restricted_api_key": 401,
    "plan_limit_reached": 402,
    "invalid_api_key": 403,
    "dashboard_only": 403,
    "view_only_member": 403,
    "reputation_paused": 403,
    "not_found": 404,
    "invalid_idempotent_request": 409,
    "concurrent_idempotent_requests": 409,
    "domain_conflict": 409,
    "invalid_attachment": 422,
    "validation_error": 422,
    "invalid_from_address": 422,
    "invalid_to_address": 422,
    "missing_required_field": 422,
    "reserved_recipient": 422,
    "daily_quota_exceeded": 429,
    "monthly_quota_exceeded": 429,
    "contact_limit_reached": 429,
    "ai_credits_exceeded": 429,
    "automation_quota_exceeded": 429,
    "rate_limit_exceeded": 429,
    "reputation_limit_exceeded": 429,
    "application_error": 500,
    "internal_server_error": 500,
    "contacts_busy": 503,
    "contacts_timeout": 503,
    "batch_incomplete": 503,
    "sending_service_unavailable": 503,
    "sending_configuration_unavailable": 503,
}


def api_error_classes() -> list[type[errors.ApiError]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.ApiError) and not cls.__name__.startswith("_")
    ]


@pytest.mark.parametrize(("name", "status"), sorted(SPEC_TABLE.items()))
def test_each_spec_name_has_a_class_with_its_status(name: str, status: int) -> None:
    matching = [
        cls for cls in api_error_classes() if cls.name == name and cls.status_code == status
    ]
    assert matching, f"no error class for {status} {name}"
    envelope = matching[0]().to_envelope()
    assert envelope["statusCode"] == status and envelope["name"] == name and envelope["message"]


def test_missing_user_agent_is_a_403_validation_error() -> None:
    assert errors.MissingUserAgent().to_envelope()["statusCode"] == 403
    assert errors.MissingUserAgent.name == "validation_error"


def test_retry_later_errors_carry_retry_after() -> None:
    assert errors.ContactsBusy(retry_after=7).headers == {"retry-after": "7"}
    assert errors.RateLimitExceeded().headers["retry-after"] == "1"


def test_every_error_descends_from_the_one_root() -> None:
    for cls in api_error_classes():
        assert issubclass(cls, errors.MailbridgeError)


def test_missing_required_field_names_the_field() -> None:
    assert errors.MissingRequiredField.for_field("to").message == "Missing `to` field."


def test_extra_fields_join_the_envelope() -> None:
    error = errors.BatchIncomplete(extra={"sent": ["a"], "sent_count": 1})
    assert error.to_envelope()["sent_count"] == 1


def test_resource_conflicts_keep_their_own_name() -> None:
    error = errors.Conflict("contact_exists", "This contact exists already.")
    assert (error.status_code, error.name) == (409, "contact_exists")
    assert errors.Conflict.name == "application_error"  # the class itself is untouched
