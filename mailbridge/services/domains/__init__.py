"""Domains: sending and receiving domains of a team.

Owns ``domains`` and ``domain_claims``: the DNS records to publish (DKIM, SPF, return
path, tracking, the receiving MX), their verification against a real resolver, and
claims of a domain another team holds. The email context asks it which domain may
send, the inbound context which receives (and looks up TXT records through it).
"""

from __future__ import annotations

from mailbridge.services.domains._claims import (
    claim_domain,
    claim_for_domain,
    claim_view,
    verify_claim,
)
from mailbridge.services.domains._domains import (
    DEFAULT_RETURN_PATH,
    DEFAULT_TRACKING_SUBDOMAIN,
    LABEL_PATTERN,
    MAX_DOMAIN_NAME_LENGTH,
    REGIONS,
    DomainChanges,
    DomainOptions,
    Tls,
    create_domain,
    delete_domain,
    domain_summary_view,
    domain_view,
    find_domain,
    get_domain,
    list_domains,
    mark_verified,
    normalize_name,
    receiving_domain,
    sending_domain,
    sending_domain_names,
    update_domain,
)
from mailbridge.services.domains._records import txt_values
from mailbridge.services.domains._verification import recheck_due_domains, verify_domain

__all__ = [
    "DEFAULT_RETURN_PATH",
    "DEFAULT_TRACKING_SUBDOMAIN",
    "LABEL_PATTERN",
    "MAX_DOMAIN_NAME_LENGTH",
    "REGIONS",
    "DomainChanges",
    "DomainOptions",
    "Tls",
    "claim_domain",
    "claim_for_domain",
    "claim_view",
    "create_domain",
    "delete_domain",
    "domain_summary_view",
    "domain_view",
    "find_domain",
    "get_domain",
    "list_domains",
    "mark_verified",
    "normalize_name",
    "receiving_domain",
    "recheck_due_domains",
    "sending_domain",
    "sending_domain_names",
    "txt_values",
    "update_domain",
    "verify_claim",
    "verify_domain",
]
