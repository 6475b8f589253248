"""Every error mailbridge reports, one class per name of spec §7.

    MailbridgeError                      root of everything raised on purpose
    ├── ConfigurationError               bad settings or operator input (CLI)
    └── ApiError                         carries an HTTP status and a spec name
        ├── InvalidIdempotencyKey        400 invalid_idempotency_key
        ├── MissingApiKey                401 missing_api_key
        ├── RestrictedApiKey             401 restricted_api_key
        ├── PlanLimitReached             402 plan_limit_reached
        ├── InvalidApiKey                403 invalid_api_key
        ├── DashboardOnly                403 dashboard_only
        ├── ViewOnlyMember               403 view_only_member
        ├── ReputationPaused             403 reputation_paused
        ├── MissingUserAgent             403 validation_error
        ├── NotFound                     404 not_found
        ├── MethodNotAllowed             405 method_not_allowed
        ├── InvalidIdempotentRequest     409 invalid_idempotent_request
        ├── ConcurrentIdempotentRequests 409 concurrent_idempotent_requests
        ├── DomainConflict               409 domain_conflict
        ├── Conflict                     409 (a resource-specific name, e.g. contact_exists)
        ├── HttpStatusError              any other status the HTTP layer raises
        ├── PayloadTooLarge              413 payload_too_large
        ├── InvalidAttachment            422 invalid_attachment
        ├── ValidationError              422 validation_error
        ├── InvalidFromAddress           422 invalid_from_address
        ├── InvalidToAddress             422 invalid_to_address
        ├── MissingRequiredField         422 missing_required_field
        ├── ReservedRecipient            422 reserved_recipient
        ├── BatchIncompleteUnkeyed       422 batch_incomplete (no Idempotency-Key)
        ├── DailyQuotaExceeded           429 daily_quota_exceeded
        ├── MonthlyQuotaExceeded         429 monthly_quota_exceeded
        ├── ContactLimitReached          429 contact_limit_reached
        ├── AiCreditsExceeded            429 ai_credits_exceeded
        ├── AutomationQuotaExceeded      429 automation_quota_exceeded
        ├── RateLimitExceeded            429 rate_limit_exceeded
        ├── ReputationLimitExceeded      429 reputation_limit_exceeded
        ├── ApplicationError             500 application_error
        ├── InternalServerError          500 internal_server_error
        ├── ContactsBusy                 503 contacts_busy
        ├── ContactsTimeout              503 contacts_timeout
        ├── BatchIncomplete              503 batch_incomplete (with an Idempotency-Key)
        ├── SendingServiceUnavailable    503 sending_service_unavailable
        ├── SendingConfigurationUnavailable 503 sending_configuration_unavailable
        └── ServiceUnavailable           503 service_unavailable (database or Redis out of reach)

An ``ApiError`` becomes the envelope ``{statusCode, name, message}`` (plus any
``extra`` fields) and its ``headers`` (``retry-after`` and the like).
"""

from __future__ import annotations

from typing import Any, ClassVar


class MailbridgeError(Exception):
    """Root of every exception mailbridge raises on purpose."""


class ConfigurationError(MailbridgeError):
    """Settings or operator input that cannot work."""


class ApiError(MailbridgeError):
    status_code: int = 500
    name: str = "application_error"
    default_message: ClassVar[str] = "An unexpected error occurred."

    def __init__(
        self,
        message: str | None = None,
        *,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})
        super().__init__(self.message)

    def to_envelope(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "statusCode": self.status_code,
            "name": self.name,
            # A message may quote the caller's input; a lone surrogate in it would not
            # encode, and the answer would become a 500.
            "message": self.message.encode("utf-8", "backslashreplace").decode("utf-8"),
        }
        body.update(self.extra)
        return body


class _RetryLater(ApiError):
    """An error whose client should honour ``retry-after``."""

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_after: int = 1,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        merged = {"retry-after": str(max(1, retry_after))}
        merged.update(headers or {})
        super().__init__(message, headers=merged, extra=extra)


class InvalidIdempotencyKey(ApiError):
    status_code, name = 400, "invalid_idempotency_key"
    default_message = "The Idempotency-Key header must be 1 to 255 characters."


class MissingApiKey(ApiError):
    status_code, name = 401, "missing_api_key"
    default_message = (
        "Missing API key in the authorization header. "
        "Include the header: Authorization: Bearer YOUR_API_KEY"
    )


class RestrictedApiKey(ApiError):
    status_code, name = 401, "restricted_api_key"
    default_message = "This API key is restricted to sending emails only."


class PlanLimitReached(ApiError):
    status_code, name = 402, "plan_limit_reached"
    default_message = "Your plan's limit blocks this request."


class InvalidApiKey(ApiError):
    status_code, name = 403, "invalid_api_key"
    default_message = "API key is invalid, expired or revoked."


class DashboardOnly(ApiError):
    status_code, name = 403, "dashboard_only"
    default_message = "This action is available only in the dashboard, not with an API key."


class ViewOnlyMember(ApiError):
    status_code, name = 403, "view_only_member"
    default_message = "View-only members may read but not create, change, delete or send."


class RoleTooLow(ApiError):
    """A member whose role does not reach the change (an admin touching an owner)."""

    status_code, name = 403, "validation_error"
    default_message = "Your role does not allow this change."


class ReputationPaused(ApiError):
    status_code, name = 403, "reputation_paused"
    default_message = "Sending is paused for this account or domain."


class MissingUserAgent(ApiError):
    status_code, name = 403, "validation_error"
    default_message = "Requests must carry a User-Agent header."


class NotFound(ApiError):
    status_code, name = 404, "not_found"
    default_message = "The requested endpoint or resource does not exist."


class MethodNotAllowed(ApiError):
    status_code, name = 405, "method_not_allowed"
    default_message = "This endpoint does not support the HTTP method used."


class InvalidIdempotentRequest(ApiError):
    status_code, name = 409, "invalid_idempotent_request"
    default_message = "This Idempotency-Key was already used with a different payload."


class ConcurrentIdempotentRequests(ApiError):
    status_code, name = 409, "concurrent_idempotent_requests"
    default_message = "A request with this Idempotency-Key is still in progress."


class DomainConflict(ApiError):
    status_code, name = 409, "domain_conflict"
    default_message = (
        "This domain, its parent or a subdomain is verified by another account; "
        "use POST /domains/claim."
    )


class Conflict(ApiError):
    """A 409 whose name belongs to the resource (``contact_exists``, ...)."""

    status_code = 409

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class HttpStatusError(ApiError):
    """A status raised by the HTTP framework itself (other than 404 and 405)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.name = "validation_error" if status_code < 500 else "application_error"


class PayloadTooLarge(ApiError):
    status_code, name = 413, "payload_too_large"
    default_message = "The request body is larger than this server accepts."


class InvalidAttachment(ApiError):
    status_code, name = 422, "invalid_attachment"
    default_message = "An attachment needs either `content` or `path`."


class ValidationError(ApiError):
    status_code, name = 422, "validation_error"
    default_message = "The request is not valid."


class InvalidFromAddress(ApiError):
    status_code, name = 422, "invalid_from_address"
    default_message = "Invalid `from` field. Use `email@example.com` or `Name <email@example.com>`."


class InvalidToAddress(ApiError):
    status_code, name = 422, "invalid_to_address"
    default_message = "Invalid `to` field."


class MissingRequiredField(ApiError):
    status_code, name = 422, "missing_required_field"
    default_message = "A required field is missing."

    @classmethod
    def for_field(cls, field: str) -> MissingRequiredField:
        return cls(f"Missing `{field}` field.")


class ReservedRecipient(ApiError):
    status_code, name = 422, "reserved_recipient"
    default_message = "The recipient is on a reserved documentation or testing domain."


class BatchIncompleteUnkeyed(ApiError):
    status_code, name = 422, "batch_incomplete"
    default_message = "The batch ran out of time; only the emails listed in `sent` were sent."


class DailyQuotaExceeded(ApiError):
    status_code, name = 429, "daily_quota_exceeded"
    default_message = "You have reached your daily email quota."


class MonthlyQuotaExceeded(ApiError):
    status_code, name = 429, "monthly_quota_exceeded"
    default_message = "You have reached your monthly email quota."


class ContactLimitReached(ApiError):
    status_code, name = 429, "contact_limit_reached"
    default_message = "Contact limit reached."


class AiCreditsExceeded(ApiError):
    status_code, name = 429, "ai_credits_exceeded"
    default_message = "All AI credits of the rolling 30-day window are used."


class AutomationQuotaExceeded(ApiError):
    status_code, name = 429, "automation_quota_exceeded"
    default_message = "All automation runs of the rolling 30-day window are used."


class RateLimitExceeded(_RetryLater):
    status_code, name = 429, "rate_limit_exceeded"
    default_message = "Too many requests. Please slow down."


class ReputationLimitExceeded(_RetryLater):
    status_code, name = 429, "reputation_limit_exceeded"
    default_message = "The account or domain is at its sending capacity; nothing was sent."


class ApplicationError(ApiError):
    status_code, name = 500, "application_error"
    default_message = "An unexpected error occurred. Idempotent requests are safe to retry."


class InternalServerError(ApiError):
    status_code, name = 500, "internal_server_error"
    default_message = "An unexpected error occurred. Retry later."


class ContactsBusy(_RetryLater):
    status_code, name = 503, "contacts_busy"
    default_message = "Another contact write holds this account's contact lock; nothing changed."


class ContactsTimeout(_RetryLater):
    status_code, name = 503, "contacts_timeout"
    default_message = "The contact write took too long and was rolled back."


class BatchIncomplete(_RetryLater):
    status_code, name = 503, "batch_incomplete"
    default_message = "The batch ran out of time; only the emails listed in `sent` were sent."


class SendingServiceUnavailable(_RetryLater):
    status_code, name = 503, "sending_service_unavailable"
    default_message = "Sending is paused platform-wide; nothing was sent."


class SendingConfigurationUnavailable(_RetryLater):
    status_code, name = 503, "sending_configuration_unavailable"
    default_message = "Service configuration is briefly out of step; nothing was sent."


class ServiceUnavailable(_RetryLater):
    """DESIGN §6: an outage of PostgreSQL (or SQLite locked past its timeout) or of Redis."""

    status_code, name = 503, "service_unavailable"
    default_message = (
        "A store this service depends on is unreachable just now. Retry after `retry-after` "
        "seconds (a send with the same Idempotency-Key is never sent twice)."
    )

    def __init__(
        self,
        message: str | None = None,
        *,
        retry_after: int = 2,  # a PostgreSQL restart or a Redis failover takes seconds
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, retry_after=retry_after, headers=headers, extra=extra)
