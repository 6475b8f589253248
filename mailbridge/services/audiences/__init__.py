"""Audiences: the people mail is sent to.

Owns audiences, contacts (and the per-contact write lock), contact batches,
contact properties, segments and their filters, topics and subscriptions (tables
``audiences``, ``contacts``, ``contact_locks``, ``contact_properties``, ``segments``,
``segment_members``, ``contact_engagements``, ``topics``, ``contact_topics``).
"""

from __future__ import annotations

from mailbridge.services.audiences._audience_scope import (
    AudienceScope,
    audience_scope,
    list_audience_contacts,
)
from mailbridge.services.audiences._audiences import MAX_NAME_LENGTH as MAX_AUDIENCE_NAME_LENGTH
from mailbridge.services.audiences._audiences import (
    audience_view,
    create_audience,
    delete_audience,
    get_audience,
    list_audiences,
    resolve_audience,
)
from mailbridge.services.audiences._contact_batch import MAX_BATCH_SIZE as MAX_CONTACT_BATCH_SIZE
from mailbridge.services.audiences._contact_batch import outcome_view, upsert_contacts
from mailbridge.services.audiences._contact_filters import ContactFilters
from mailbridge.services.audiences._contacts import (
    ContactChanges,
    ContactFields,
    NewContact,
    TopicChoice,
    apply_changes,
    contact_view,
    create_contact,
    delete_contact,
    event_data,
    find_contact,
    list_contacts,
    new_contact_row,
    normalize_email,
    update_contact,
)
from mailbridge.services.audiences._properties import KEY_WIRE_SCHEMA as PROPERTY_KEY_SCHEMA
from mailbridge.services.audiences._properties import (
    PROPERTY_TYPES,
    check_contact_properties,
    contact_property_view,
    create_property,
    delete_property,
    get_property,
    list_properties,
    registered_properties,
    update_property,
)
from mailbridge.services.audiences._recipients import check_recipients, recipients_condition
from mailbridge.services.audiences._segment_filters import SegmentFilter
from mailbridge.services.audiences._segments import add_member as add_segment_member
from mailbridge.services.audiences._segments import (
    create_segment,
    delete_segment,
    get_segment,
    list_segments,
    member_ids,
    segment_contacts,
    segment_size,
    segment_view,
    segments_of_contact,
    update_segment,
)
from mailbridge.services.audiences._segments import remove_member as remove_segment_member
from mailbridge.services.audiences._topics import (
    MAX_DESCRIPTION_LENGTH as MAX_TOPIC_DESCRIPTION_LENGTH,
)
from mailbridge.services.audiences._topics import MAX_NAME_LENGTH as MAX_TOPIC_NAME_LENGTH
from mailbridge.services.audiences._topics import (
    contact_subscriptions,
    create_topic,
    delete_topic,
    get_topic,
    list_topics,
    set_choices,
    subscription_view,
    topic_view,
    update_topic,
)

__all__ = [
    "MAX_AUDIENCE_NAME_LENGTH",
    "MAX_CONTACT_BATCH_SIZE",
    "MAX_TOPIC_DESCRIPTION_LENGTH",
    "MAX_TOPIC_NAME_LENGTH",
    "PROPERTY_KEY_SCHEMA",
    "PROPERTY_TYPES",
    "AudienceScope",
    "ContactChanges",
    "ContactFields",
    "ContactFilters",
    "NewContact",
    "SegmentFilter",
    "TopicChoice",
    "add_segment_member",
    "apply_changes",
    "audience_scope",
    "audience_view",
    "check_contact_properties",
    "check_recipients",
    "contact_property_view",
    "contact_subscriptions",
    "contact_view",
    "create_audience",
    "create_contact",
    "create_property",
    "create_segment",
    "create_topic",
    "delete_audience",
    "delete_contact",
    "delete_property",
    "delete_segment",
    "delete_topic",
    "event_data",
    "find_contact",
    "get_audience",
    "get_property",
    "get_segment",
    "get_topic",
    "list_audience_contacts",
    "list_audiences",
    "list_contacts",
    "list_properties",
    "list_segments",
    "list_topics",
    "member_ids",
    "new_contact_row",
    "normalize_email",
    "outcome_view",
    "recipients_condition",
    "registered_properties",
    "remove_segment_member",
    "resolve_audience",
    "segment_contacts",
    "segment_size",
    "segment_view",
    "segments_of_contact",
    "set_choices",
    "subscription_view",
    "topic_view",
    "update_contact",
    "update_property",
    "update_segment",
    "update_topic",
    "upsert_contacts",
]
