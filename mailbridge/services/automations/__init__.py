"""Automations: graphs, their versions and steps, the runs through them, and events in.

Owns ``automations``, ``automation_versions``, ``automation_runs``,
``automation_run_steps`` and ``event_definitions``; implements the engine's ports on
the database (``sql_engine``) and the triggers' (``mailbridge.triggers``, where what
starts a run is mapped): custom events in (``send_event``, ``POST /events/send``) and
built-in activity fed to the engine (``BuiltInTriggers``, registered here with the
webhooks context's activity dispatcher as the consumer after its fan-out).
"""

from __future__ import annotations

from mailbridge.services.automations._agent_answers import apply_agent_answer
from mailbridge.services.automations._automations import (
    MAX_AUTOMATION_NAME_LENGTH,
    STATUSES,
    TRIGGER_CONFIG_FIELDS,
    NewAutomation,
    automation_list_item,
    automation_view,
    create_automation,
    delete_automation,
    duplicate_automation,
    find_automation,
    get_automation,
    list_automations,
    stop_automation,
    update_automation,
)
from mailbridge.services.automations._backend import sql_engine
from mailbridge.services.automations._builtin_triggers import BuiltInTriggers, built_in_triggers
from mailbridge.services.automations._event_definitions import (
    FIELD_PATTERN,
    FIELD_TYPES,
    MAX_DESCRIPTION_LENGTH,
    MAX_EVENT_NAME_LENGTH,
    MAX_FIELDS,
    create_definition,
    delete_definition,
    event_definition_view,
    find_definition,
    list_definitions,
    update_definition,
)
from mailbridge.services.automations._event_intake import SendEventRequest, send_event
from mailbridge.services.automations._graphs import graph_of
from mailbridge.services.automations._runs import (
    get_run,
    list_runs,
    run_detail_view,
    run_view,
    runs_of_contact,
)
from mailbridge.services.automations._steps import (
    NewStep,
    add_step,
    delete_step,
    find_step,
    update_step,
)
from mailbridge.services.webhooks import register_consumer

register_consumer(BuiltInTriggers.name, built_in_triggers)

__all__ = [
    "FIELD_PATTERN",
    "FIELD_TYPES",
    "MAX_AUTOMATION_NAME_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_EVENT_NAME_LENGTH",
    "MAX_FIELDS",
    "STATUSES",
    "TRIGGER_CONFIG_FIELDS",
    "NewAutomation",
    "NewStep",
    "SendEventRequest",
    "add_step",
    "apply_agent_answer",
    "automation_list_item",
    "automation_view",
    "create_automation",
    "create_definition",
    "delete_automation",
    "delete_definition",
    "delete_step",
    "duplicate_automation",
    "event_definition_view",
    "find_automation",
    "find_definition",
    "find_step",
    "get_automation",
    "get_run",
    "graph_of",
    "list_automations",
    "list_definitions",
    "list_runs",
    "run_detail_view",
    "run_view",
    "runs_of_contact",
    "send_event",
    "sql_engine",
    "stop_automation",
    "update_automation",
    "update_definition",
    "update_step",
]
