"""Source plug-ins. Each source implements :class:`cdclake.sources.base.Source`."""
