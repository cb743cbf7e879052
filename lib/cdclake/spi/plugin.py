"""The source registry: every source is a plug-in found here, and nothing else names it.

A source is a package with a ``plugin`` module defining ``PLUGIN``, a :class:`SourcePlugin`:

* cdclake's own sources are the packages under ``cdclake/sources/`` that have one (found by
  scanning the package, so a zip shipped with ``--py-files`` finds them too);
* a source in another distribution registers its ``SourcePlugin`` under the entry-point group
  ``cdclake.sources`` (``[project.entry-points."cdclake.sources"] db = "mypkg.plugin:PLUGIN"``).

The pipeline file's ``source:`` block is validated by the model of the plug-in whose ``types``
holds its ``type``; the jars set-up fetches are the plug-ins' ``jars``; ``pip install
cdclake[<name>]`` installs a built-in source's ``requirements.txt``.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

from cdclake.errors import ConfigError
from cdclake.spi.config import SourceConfigBase, SourceContext

if TYPE_CHECKING:
    from cdclake.spi.source import Source

ENTRY_POINT_GROUP = "cdclake.sources"
BUILTIN_PACKAGE = "cdclake.sources"


@dataclass(frozen=True)
class SourcePlugin:
    """One source, as the registry knows it.

    ``source`` names the :class:`~cdclake.spi.source.Source` class as ``"module:Class"``: it is imported
    when a pipeline of this source runs, never at registration (every plug-in module is imported to
    build the configuration model, so it imports no driver); it is built as ``Class(config, context)``.
    ``commands`` returns extra ``click`` commands for the ``cdclake`` CLI.
    """

    name: str  # package and install extra, e.g. "mysql": pip install cdclake[mysql]
    types: tuple[str, ...]  # the source.type values it serves, e.g. ("mysql", "mariadb")
    config_model: type[SourceConfigBase]
    source: str  # e.g. "cdclake.sources.mysql.source:MySqlSource"
    jars: tuple[str, ...] = ()  # Maven coordinates Spark needs (e.g. the JDBC driver)
    docs: str = ""  # the docs page, e.g. docs/oracle.md
    summary: str = ""
    commands: Callable[[], list[Any]] = field(default=lambda: [])

    def source_class(self) -> type[Source]:
        """The source's class, imported now."""
        module, _, name = self.source.partition(":")
        cls: type[Source] = getattr(importlib.import_module(module), name)
        return cls


def _builtin() -> list[SourcePlugin]:
    package = importlib.import_module(BUILTIN_PACKAGE)
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        try:
            module = importlib.import_module(f"{BUILTIN_PACKAGE}.{info.name}.plugin")
        except ModuleNotFoundError as exc:
            if exc.name == f"{BUILTIN_PACKAGE}.{info.name}.plugin":
                continue  # a package that is not a source
            raise
        found.append(module.PLUGIN)
    return found


def _external() -> list[SourcePlugin]:
    return [ep.load() for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]


@functools.cache
def plugins() -> tuple[SourcePlugin, ...]:
    """Every registered source plug-in, cdclake's own first."""
    out: list[SourcePlugin] = []
    owner: dict[str, str] = {}
    for plugin in [*_builtin(), *_external()]:
        if any(p.name == plugin.name for p in out):
            continue  # an installed cdclake also lists its own sources as entry points
        for t in plugin.types:
            if t in owner:
                raise ConfigError(f"source plug-ins {owner[t]!r} and {plugin.name!r} both serve source.type {t!r}",
                                  f"uninstall one of them (entry-point group {ENTRY_POINT_GROUP})")
            owner[t] = plugin.name
        out.append(plugin)
    return tuple(out)


def source_types() -> list[str]:
    """Every ``source.type`` value a pipeline file may use."""
    return [t for p in plugins() for t in p.types]


def plugin_for(source_type: str) -> SourcePlugin:
    for p in plugins():
        if source_type in p.types:
            return p
    raise ConfigError(f"source.type: {source_type!r} is not a registered source",
                      f"use one of {', '.join(source_types())}")


def create_source(config: Any, context: SourceContext) -> Source:
    """The :class:`~cdclake.spi.source.Source` for a validated ``source:`` block."""
    plugin = plugin_for(config.type)
    try:
        return plugin.source_class()(config, context)
    except ImportError as exc:
        raise ConfigError(f"source.type {config.type} needs the Python package {exc.name!r}, which is not installed",
                          f"pip install 'cdclake[{plugin.name}]'") from exc
