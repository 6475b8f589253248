"""What starts a run: events in, from mailbridge's own activity and from programs.

Two paths lead into the engine; both end in ``Engine.emit_in`` inside a transaction that
the caller commits with whatever else it did::

    built-in activity                          custom events
    -----------------                          -------------
    a service changes something and records    POST /events/send
    an activity row in the same transaction      api/routers/event_intake.py
      services.kernel  record_event           services.automations.send_event
    the activity dispatcher claims new rows      (_event_intake.py: the request, the
      (the runner's ActivityDispatcher over      key's domain, the SQL lookups)
      services/webhooks/_activity_dispatch.py) triggers.custom
    hands them to every registered consumer      custom_event_name  built-in names refused
      (webhooks' fan-out, then automations')     emit_custom_event  payload vs definition,
    services.automations.BuiltInTriggers                            the contact, quota
      (_builtin_triggers.py: the SQL half)              |
    triggers.activity                                   |
      ListenedNames  only types some automation         |
                     listens for cost a lookup          |
      events_of      one event per contact              |
      emit_activity  quota: logged, not refused         |
                          \\                           /
                           Engine.emit_in  (mailbridge.engine.engine)
      - a run of every enabled automation the event triggers: the contact enrolled
        (created in the automation's audience for a new address), no re-entry while it
        has an active run there unless allowed, the run quota counted;
      - every run of the contact waiting for the event whose ``filter_rule`` holds made
        due, to follow ``event_received``.

Then the runner's automation worker advances due runs (``Engine.run_due``). Matching an
event to automations and to waiting runs is the engine's, so that an embedding program
gets it with ``Engine.emit``; this package holds what mailbridge adds around it — which
activity stands for which events, which names are worth a lookup, the rules of intake —
over ports, without the database: ``services.automations`` implements them on its tables.
"""

from mailbridge.triggers.activity import (
    Activity,
    ListenedNames,
    Listener,
    Listeners,
    emit_activity,
    events_of,
)
from mailbridge.triggers.custom import (
    BUILT_IN_PREFIXES,
    CustomEventChecks,
    custom_event_name,
    emit_custom_event,
)

__all__ = [
    "BUILT_IN_PREFIXES",
    "Activity",
    "CustomEventChecks",
    "ListenedNames",
    "Listener",
    "Listeners",
    "custom_event_name",
    "emit_activity",
    "emit_custom_event",
    "events_of",
]
