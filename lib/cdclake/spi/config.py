"""What every source's ``source:`` block of the pipeline file shares, and what a source is told at creation."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator


class StrictModel(BaseModel):
    """A configuration block: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceConfigBase(StrictModel):
    """The keys every ``source:`` block has. A source's own model subclasses it and narrows ``type``
    to its ``Literal`` tag(s): the pipeline file's ``source:`` union is built from the registered models.

    >>> class Demo(SourceConfigBase):
    ...     type: str = "demo"
    >>> Demo(include_tables=[r"shop\\..*"], exclude_tables=[r"shop\\.tmp_.*"]).captures("shop.tmp_x")
    False
    """

    type: str
    include_tables: list[str] = Field(default_factory=lambda: [".*"])
    exclude_tables: list[str] = Field(default_factory=list)

    @field_validator("include_tables", "exclude_tables")
    @classmethod
    def _regexes_compile(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"invalid regex {p!r}: {exc}") from exc
        return patterns

    def captures(self, qualified: str) -> bool:
        """Anchored include/exclude matching on ``database.table`` (Oracle: ``OWNER.TABLE``)."""
        if not any(re.fullmatch(p, qualified) for p in self.include_tables):
            return False
        return not any(re.fullmatch(p, qualified) for p in self.exclude_tables)


@dataclass(frozen=True)
class SourceContext:
    """What a source is told about the pipeline it serves when it is created."""

    pipeline: str  # the pipeline's name
    lake_root: str
    skip_unparsable_ddl: bool = False  # mining.skip_unparsable_ddl: record such DDL and go on

    @property
    def pipeline_id(self) -> str:
        """Names this pipeline among others capturing the same database (``<pipeline>@<lake root>``)."""
        return f"{self.pipeline}@{self.lake_root}"
