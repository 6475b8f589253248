"""Templates: versioned email content with variables, drafts and published versions.

Owns ``templates`` and ``template_versions``. Email sending and automation send steps
render the published version through this face.
"""

from __future__ import annotations

from mailbridge.services.templates._content import (
    ADDRESS_PATTERN,
    MAX_ALIAS_LENGTH,
    MAX_FROM_LENGTH,
    MAX_REPLY_TO,
    MAX_SUBJECT_LENGTH,
    MAX_TEMPLATE_NAME_LENGTH,
    TemplateContent,
    normalize_reply_to,
)
from mailbridge.services.templates._templates import (
    PublishedTemplate,
    TemplateChanges,
    create_template,
    delete_template,
    duplicate_template,
    get_template,
    list_templates,
    publish_template,
    published_template,
    template_list_item,
    template_view,
    update_template,
)

__all__ = [
    "ADDRESS_PATTERN",
    "MAX_ALIAS_LENGTH",
    "MAX_FROM_LENGTH",
    "MAX_REPLY_TO",
    "MAX_SUBJECT_LENGTH",
    "MAX_TEMPLATE_NAME_LENGTH",
    "PublishedTemplate",
    "TemplateChanges",
    "TemplateContent",
    "create_template",
    "delete_template",
    "duplicate_template",
    "get_template",
    "list_templates",
    "normalize_reply_to",
    "publish_template",
    "published_template",
    "template_list_item",
    "template_view",
    "update_template",
]
