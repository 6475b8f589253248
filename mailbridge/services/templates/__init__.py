"""Templates: versioned email content with variables, drafts and published versions.

Owns ``templates`` and ``template_versions``. Email sending and automation send steps
render the published version through this face.
"""

from __future__ import annotations

from mailbridge.services.templates._templates import (
    PublishedTemplate,
    TemplateChanges,
    TemplateContent,
    create_template,
    delete_template,
    duplicate_template,
    get_template,
    list_templates,
    normalize_reply_to,
    publish_template,
    published_template,
    template_list_item,
    template_view,
    update_template,
)

__all__ = [
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
