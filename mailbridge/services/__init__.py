"""The application layer: one package per bounded context, and the kernel they share.

Contexts: ``accounts``, ``domains``, ``audiences``, ``templates``, ``email``,
``automations``, ``webhooks``. Each exports its face from ``__init__.py``; its other
modules are named ``_x`` and private to it. The api, cli and runner, and the other
contexts, call only the faces (import-linter's ``private_modules`` contract checks it).

The kernel, used by every context: ``context`` (``ServiceContext``: settings, database,
clock, the hot caches), ``activity`` (``record_event``), ``cache`` (``TTLCache``) and
``instance`` (the instance-wide link-signing secret).
"""
