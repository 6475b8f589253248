"""Events in: POST /events/send (:mod:`.intake`) and built-in activity (:mod:`.builtin`)
start and resume automation runs through the engine."""
