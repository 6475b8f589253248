"""What every step type provides: its names, its edges, its config and how it runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from mailbridge.engine.execution import Execution
from mailbridge.engine.ports import References
from mailbridge.engine.runs import Outcome


def problems_of(model: type[BaseModel], config: object) -> list[str]:
    """pydantic's complaints about ``config``, one line each, naming the field."""
    try:
        model.model_validate(config)
    except ValidationError as error:
        problems = []
        for issue in error.errors():
            message = issue["msg"].removeprefix("Value error, ")
            where = ".".join(str(part) for part in issue["loc"])
            problems.append(f"config.{where}: {message}" if where else f"config: {message}")
        return problems
    return []


class StepKind:
    """A step type (what the engine's :class:`~mailbridge.engine.ports.StepKind` asks for).
    Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]  # public vocabulary
    stored_name: ClassVar[str]  # stored vocabulary
    edges: ClassVar[frozenset[str]] = frozenset({"default"})
    terminal: ClassVar[bool] = False
    config_model: ClassVar[type[BaseModel]]

    def check(self, config: object, references: References) -> list[str]:
        """Problems with a public config (empty: valid)."""
        return problems_of(self.config_model, config)

    def to_stored(self, config: Mapping[str, Any], references: References) -> dict[str, Any]:
        """A checked public config in the stored vocabulary."""
        return self.config_model.model_validate(config).model_dump(
            mode="json", by_alias=True, exclude_unset=True
        )

    def to_public(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return dict(config)

    async def execute(self, execution: Execution) -> Outcome:
        raise NotImplementedError
