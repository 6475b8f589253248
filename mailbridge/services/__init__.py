"""The application layer: one package per bounded context, and the kernel they share.

Contexts: ``accounts``, ``members``, ``domains``, ``audiences``, ``templates``,
``email``, ``suppressions``, ``delivery``, ``automations``, ``campaigns``, ``inbound``,
``inboxes``, ``webhooks``, ``polls`` and ``operations``. Each exports from ``__init__.py`` what the
others, the api, cli and runner use, under the names it is defined with; its other
modules are named ``_x`` and private to it (import-linter's ``private_modules`` contract
checks it).

The ``kernel`` package, used by every context and importing none: ``ServiceContext``
(settings, database, clock, the process's caches), ``record_event``, ``TTLCache`` and
the instance-wide values (the link-signing secret, the runner heartbeat).
"""
